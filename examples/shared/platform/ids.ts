/**
 * What a platform id may look like (docs/example-service.md#endpoints), and what a video id's prefix means to the
 * fake platform. Ids are checked here, before anything is derived from them.
 */
import { InvalidIdError } from './errors.ts';

const VIDEO_ID = /^[A-Za-z0-9_-]{11}$/;
const CHANNEL_ID = /^UC[A-Za-z0-9_-]{22}$/;
const PLAYLIST_ID = /^PL[A-Za-z0-9_-]{16,32}$/;

/** How the fake platform treats a video, chosen by the start of its id. */
export type VideoBehaviour = 'ordinary' | 'unavailable' | 'no_captions' | 'no_comments' | 'comments_error' | 'bad_conversion';

/** The id prefixes that make a video fail in a known way (docs/example-service.md#endpoints). */
export const VIDEO_ID_PREFIXES = {
  unavail: 'unavailable',
  nocapt: 'no_captions',
  nocomm: 'no_comments',
  errcomm: 'comments_error',
  badconv: 'bad_conversion',
} as const satisfies Record<string, Exclude<VideoBehaviour, 'ordinary'>>;

export function videoBehaviour(videoId: string): VideoBehaviour {
  for (const [prefix, behaviour] of Object.entries(VIDEO_ID_PREFIXES)) {
    if (videoId.startsWith(prefix)) return behaviour;
  }
  return 'ordinary';
}

export function isVideoId(value: unknown): value is string {
  return typeof value === 'string' && VIDEO_ID.test(value);
}

export function isChannelId(value: unknown): value is string {
  return typeof value === 'string' && CHANNEL_ID.test(value);
}

export function isPlaylistId(value: unknown): value is string {
  return typeof value === 'string' && PLAYLIST_ID.test(value);
}

export function assertVideoId(value: unknown): string {
  if (isVideoId(value)) return value;
  throw new InvalidIdError('video_id', `Invalid video id ${shown(value)}: expected exactly 11 characters of A-Z, a-z, 0-9, _ or -`);
}

export function assertChannelId(value: unknown): string {
  if (isChannelId(value)) return value;
  throw new InvalidIdError('channel_id', `Invalid channel id ${shown(value)}: expected "UC" followed by 22 characters of A-Z, a-z, 0-9, _ or -`);
}

export function assertPlaylistId(value: unknown): string {
  if (isPlaylistId(value)) return value;
  throw new InvalidIdError('playlist_id', `Invalid playlist id ${shown(value)}: ` + 'expected "PL" followed by 16 to 32 characters of A-Z, a-z, 0-9, _ or -');
}

/** The offending value for an error message, cut short so a huge input stays out of logs. */
export function shown(value: unknown): string {
  if (typeof value !== 'string') return value === undefined ? '(missing)' : `(${typeof value})`;
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}...` : value);
}
