/** A video's captions, derived from its id and spread over its duration. */
import { rngFor } from './hash.ts';
import type { Transcript, TranscriptSegment, Video } from './types.ts';
import { spokenLine } from './words.ts';

export function deriveTranscript(video: Video): Transcript {
  const rng = rngFor('transcript', video.id);
  const endMs = video.duration_seconds * 1000;
  const segments: TranscriptSegment[] = [];
  // Whole milliseconds throughout, so every time converts to SRT/VTT without rounding.
  let atMs = rng.int(0, 1500);
  for (;;) {
    const durationMs = rng.int(1500, 6000);
    if (atMs + durationMs > endMs) break;
    segments.push({ start: atMs / 1000, duration: durationMs / 1000, text: spokenLine(rng) });
    atMs += durationMs + rng.int(0, 800);
  }
  return { video_id: video.id, language: 'en', segments };
}
