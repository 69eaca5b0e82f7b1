/**
 * The POST /jobs body (SPEC §6): exactly one of `video_ids` (deduplicated), `channel_id`,
 * `playlist_id`, and an optional boolean `include_comments`. Checked without touching Redis
 * or the platform; a problem is reported as 400 naming the field.
 */
import { isChannelId, isPlaylistId, isVideoId } from './platform/index.ts';

export type JobSource = { kind: 'video_ids'; ids: string[] } | { kind: 'channel_id' | 'playlist_id'; id: string };

export type JobRequest = { ok: true; source: JobSource; includeComments: boolean } | { ok: false; param: string; message: string };

const FIELDS = new Set(['video_ids', 'channel_id', 'playlist_id', 'include_comments']);
/** Far above any plan's max per job; longer lists are refused before they are even deduplicated. */
const MAX_LIST = 100_000;

export function parseJobRequest(body: unknown): JobRequest {
  const bad = (param: string, message: string): JobRequest => ({ ok: false, param, message });
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return bad('body', 'The body must be a JSON object');
  const fields = body as Record<string, unknown>;
  const unknown = Object.keys(fields).find((k) => !FIELDS.has(k));
  if (unknown !== undefined) return bad(unknown, `Unknown field "${unknown.slice(0, 64)}"`);
  const given = ['video_ids', 'channel_id', 'playlist_id'].filter((k) => fields[k] !== undefined);
  if (given.length !== 1) return bad('video_ids', 'Give exactly one of video_ids, channel_id or playlist_id');
  const comments = fields.include_comments;
  if (comments !== undefined && typeof comments !== 'boolean') return bad('include_comments', 'include_comments must be true or false');
  const includeComments = comments === true;

  if (given[0] === 'video_ids') {
    const ids = fields.video_ids;
    if (!Array.isArray(ids) || ids.length === 0) return bad('video_ids', 'video_ids must be a non-empty array of video ids');
    if (ids.length > MAX_LIST) return bad('video_ids', `video_ids may hold at most ${MAX_LIST} entries`);
    const at = ids.findIndex((id) => !isVideoId(id));
    if (at >= 0) return bad('video_ids', `video_ids[${at}] is not a video id (11 characters of A-Z a-z 0-9 _ -)`);
    return { ok: true, source: { kind: 'video_ids', ids: [...new Set(ids as string[])] }, includeComments };
  }
  const kind = given[0] as 'channel_id' | 'playlist_id';
  const id = fields[kind];
  const valid = kind === 'channel_id' ? isChannelId(id) : isPlaylistId(id);
  if (!valid) {
    return bad(kind, kind === 'channel_id' ? 'channel_id must be "UC" + 22 id characters' : 'playlist_id must be "PL" + 16-32 id characters');
  }
  return { ok: true, source: { kind, id: id as string }, includeComments };
}
