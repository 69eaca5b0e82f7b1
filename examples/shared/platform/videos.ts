/** A video's details, derived from its id alone. */
import { rngFor } from './hash.ts';
import type { Video } from './types.ts';
import { videoTitle } from './words.ts';

const EARLIEST_PUBLISH_MS = Date.UTC(2012, 0, 1);
/** The fake platform's "now": every date it shows lies before this instant. */
export const PLATFORM_NOW_MS = Date.UTC(2025, 0, 1);

export const MIN_DURATION_SECONDS = 30;
export const MAX_DURATION_SECONDS = 1800;

/**
 * The details of an available video. The uploading channel is derived from the video id
 * too, so it need not be one of the channels whose listings contain the video.
 */
export function deriveVideo(videoId: string): Video {
  const rng = rngFor('video', videoId);
  const title = videoTitle(rng);
  const channelId = `UC${rng.chars(22)}`;
  const durationSeconds = rng.int(MIN_DURATION_SECONDS, MAX_DURATION_SECONDS);
  // Leave a month so comments always have time to arrive after publication.
  const lastPublishSecond = (PLATFORM_NOW_MS - 30 * 86_400_000 - EARLIEST_PUBLISH_MS) / 1000;
  const publishedMs = EARLIEST_PUBLISH_MS + rng.int(0, lastPublishSecond) * 1000;
  return {
    id: videoId,
    title,
    channel_id: channelId,
    duration_seconds: durationSeconds,
    published_at: new Date(publishedMs).toISOString(),
  };
}
