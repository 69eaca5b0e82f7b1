/**
 * The POST /jobs body (docs/example-service.md#bulk-jobs), one zod schema for REST and MCP create_job: exactly one of
 * `video_ids` (deduplicated), `channel_id`, `playlist_id`, and an optional boolean
 * `include_comments`. JOB_BODY_FIELDS are the fields with their JSON types (MCP create_job's
 * input schema, so an MCP client sees them); JOB_BODY adds the rules and is what both check a
 * body with (MCP create_job runs the REST handler). Nothing here touches Redis or the platform;
 * a problem is a 400 naming the field. The Idempotency-Key fingerprint is taken from the raw
 * body before this runs (docs/example-service.md#idempotency-key).
 */
import { z } from 'zod';
import { MESSAGES } from '../http/messages.ts';
import { isChannelId, isPlaylistId, isVideoId } from '../platform/index.ts';

export type JobSource = { kind: 'video_ids'; ids: string[] } | { kind: 'channel_id' | 'playlist_id'; id: string };

export type JobRequest = { ok: true; source: JobSource; includeComments: boolean } | { ok: false; param: string; message: string };

/** Far above any plan's max per job; longer lists are refused before they are even deduplicated. */
const MAX_LIST = 100_000;

export const JOB_BODY_FIELDS = {
  video_ids: z.array(z.string()).optional(),
  channel_id: z.string().optional(),
  playlist_id: z.string().optional(),
  include_comments: z.boolean().optional(),
};

export const JOB_BODY = z.strictObject(JOB_BODY_FIELDS).superRefine((body, ctx) => {
  const bad = (param: string, message: string) => ctx.addIssue({ code: 'custom', path: [param], message });
  const given = (['video_ids', 'channel_id', 'playlist_id'] as const).filter((k) => body[k] !== undefined);
  if (given.length !== 1) return bad('video_ids', MESSAGES.oneSource);
  if (body.video_ids !== undefined) {
    const ids = body.video_ids;
    if (ids.length === 0) return bad('video_ids', MESSAGES.videoIds);
    if (ids.length > MAX_LIST) return bad('video_ids', MESSAGES.videoIdsTooLong(MAX_LIST));
    const at = ids.findIndex((id) => !isVideoId(id));
    if (at >= 0) bad('video_ids', MESSAGES.videoIdAt(at));
  }
  if (body.channel_id !== undefined && !isChannelId(body.channel_id)) bad('channel_id', MESSAGES.channelId);
  if (body.playlist_id !== undefined && !isPlaylistId(body.playlist_id)) bad('playlist_id', MESSAGES.playlistId);
});

/** Messages for a field of the wrong JSON type. */
const WRONG_TYPE: Record<string, string> = {
  video_ids: MESSAGES.videoIds,
  channel_id: MESSAGES.channelId,
  playlist_id: MESSAGES.playlistId,
  include_comments: MESSAGES.includeComments,
};

export function parseJobRequest(body: unknown): JobRequest {
  const parsed = JOB_BODY.safeParse(body);
  if (!parsed.success) return { ok: false, ...problem(parsed.error.issues[0]!) };
  const { video_ids: ids, channel_id: channel, playlist_id: playlist, include_comments: comments } = parsed.data;
  const includeComments = comments === true;
  if (ids !== undefined) return { ok: true, source: { kind: 'video_ids', ids: [...new Set(ids)] }, includeComments };
  if (channel !== undefined) return { ok: true, source: { kind: 'channel_id', id: channel }, includeComments };
  return { ok: true, source: { kind: 'playlist_id', id: playlist! }, includeComments };
}

function problem(issue: z.core.$ZodIssue): { param: string; message: string } {
  if (issue.code === 'unrecognized_keys') {
    const field = issue.keys[0] ?? 'body';
    return { param: field, message: MESSAGES.unknownField(field) };
  }
  const [param, index] = issue.path;
  if (param === undefined) return { param: 'body', message: MESSAGES.notAnObject };
  if (issue.code === 'custom') return { param: String(param), message: issue.message };
  if (param === 'video_ids' && typeof index === 'number') return { param, message: MESSAGES.videoIdAt(index) };
  return { param: String(param), message: WRONG_TYPE[String(param)] ?? issue.message };
}
