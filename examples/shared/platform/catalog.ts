/**
 * Channel and playlist listings and search results, derived from the listing's id or the
 * query. Listings mix in a few videos that fail in known ways, so a bulk job over a
 * channel or playlist always meets per-video failures (docs/example-service.md#bulk-jobs).
 */
import { InvalidRequestError } from './errors.ts';
import { type Rng, rngFor } from './hash.ts';
import { videoBehaviour } from './ids.ts';
import type { Video } from './types.ts';
import { deriveVideo } from './videos.ts';

export const MIN_LISTING_SIZE = 20;
export const MAX_LISTING_SIZE = 200;
export const MAX_SEARCH_RESULTS = 10;
export const MAX_QUERY_LENGTH = 200;

/** Share of a listing given to each failing kind; each kind appears at least once. */
const SPRINKLE = [
  { prefix: 'unavail', share: 0.03 },
  { prefix: 'nocapt', share: 0.03 },
  { prefix: 'nocomm', share: 0.02 },
  { prefix: 'errcomm', share: 0.01 },
] as const;

export function channelVideoIds(channelId: string): string[] {
  return listing(rngFor('channel', channelId));
}

export function playlistVideoIds(playlistId: string): string[] {
  return listing(rngFor('playlist', playlistId));
}

/** Between 1 and 10 available videos; the same query, up to case and spacing, gives the same. */
export function searchVideos(query: unknown): Video[] {
  const normalized = typeof query === 'string' ? query.trim().replace(/\s+/g, ' ').toLowerCase() : '';
  if (normalized === '' || normalized.length > MAX_QUERY_LENGTH) {
    throw new InvalidRequestError('q', `The search query must be 1 to ${MAX_QUERY_LENGTH} characters`);
  }
  const rng = rngFor('search', normalized);
  const ids = new Set<string>();
  const count = rng.int(1, MAX_SEARCH_RESULTS);
  while (ids.size < count) ids.add(ordinaryVideoId(rng));
  return [...ids].map(deriveVideo);
}

function listing(rng: Rng): string[] {
  const size = rng.int(MIN_LISTING_SIZE, MAX_LISTING_SIZE);
  const prefixes: (string | null)[] = [];
  for (const { prefix, share } of SPRINKLE) {
    const count = Math.max(1, Math.round(size * share));
    for (let i = 0; i < count; i++) prefixes.push(prefix);
  }
  while (prefixes.length < size) prefixes.push(null);
  shuffle(prefixes, rng);

  const ids = new Set<string>();
  for (const prefix of prefixes) {
    let id: string;
    do {
      id = prefix === null ? ordinaryVideoId(rng) : prefix + rng.chars(11 - prefix.length);
    } while (ids.has(id));
    ids.add(id);
  }
  return [...ids];
}

function ordinaryVideoId(rng: Rng): string {
  const id = rng.chars(11);
  // A derived id could start with a failing prefix by chance; no prefix starts with "A".
  return videoBehaviour(id) === 'ordinary' ? id : `A${id.slice(1)}`;
}

function shuffle<T>(items: T[], rng: Rng): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
}
