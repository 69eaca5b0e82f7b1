/**
 * Transcript conversion: JSON as fetched, plain text, SubRip (SRT) and WebVTT. This is
 * the conversion step of a transcript, so it throws typed errors the handler reports without charging.
 */
import { ConversionError, InvalidFormatError } from './errors.ts';
import { shown, videoBehaviour } from './ids.ts';
import type { Transcript, TranscriptSegment } from './types.ts';

export type TranscriptFormat = 'json' | 'text' | 'srt' | 'vtt';
export const TRANSCRIPT_FORMATS: readonly TranscriptFormat[] = ['json', 'text', 'srt', 'vtt'];

export interface ConvertedTranscript {
  contentType: string;
  body: string;
}

export function parseTranscriptFormat(value: unknown): TranscriptFormat {
  if (TRANSCRIPT_FORMATS.includes(value as TranscriptFormat)) return value as TranscriptFormat;
  throw new InvalidFormatError('format', `Invalid format ${shown(value)}: expected one of ${TRANSCRIPT_FORMATS.join(', ')}`);
}

export function convertTranscript(transcript: Transcript, format: TranscriptFormat): ConvertedTranscript {
  const checked = parseTranscriptFormat(format);
  if (checked === 'json') {
    return { contentType: 'application/json; charset=utf-8', body: JSON.stringify(transcript) };
  }
  // The fake platform's "badconv" videos: captions whose conversion always fails.
  if (videoBehaviour(transcript.video_id) === 'bad_conversion') {
    throw new ConversionError(transcript.video_id, checked);
  }
  switch (checked) {
    case 'text':
      return { contentType: 'text/plain; charset=utf-8', body: toText(transcript.segments) };
    case 'srt':
      return { contentType: 'application/x-subrip; charset=utf-8', body: toSrt(transcript.segments) };
    case 'vtt':
      return { contentType: 'text/vtt; charset=utf-8', body: toVtt(transcript.segments) };
  }
}

function toText(segments: readonly TranscriptSegment[]): string {
  return segments.map((segment) => `${oneParagraph(segment.text)}\n`).join('');
}

function toSrt(segments: readonly TranscriptSegment[]): string {
  return segments.map((segment, i) => `${i + 1}\n${cueTiming(segment, ',')}\n${oneParagraph(segment.text)}\n\n`).join('');
}

function toVtt(segments: readonly TranscriptSegment[]): string {
  const cues = segments.map((segment) => `${cueTiming(segment, '.')}\n${escapeVtt(oneParagraph(segment.text))}\n\n`);
  return `WEBVTT\n\n${cues.join('')}`;
}

function cueTiming(segment: TranscriptSegment, decimalMark: ',' | '.'): string {
  const startMs = Math.round(segment.start * 1000);
  const endMs = Math.round((segment.start + segment.duration) * 1000);
  return `${timestamp(startMs, decimalMark)} --> ${timestamp(endMs, decimalMark)}`;
}

/** HH:MM:SS,mmm (SRT) or HH:MM:SS.mmm (WebVTT). */
function timestamp(totalMs: number, decimalMark: ',' | '.'): string {
  const hours = Math.floor(totalMs / 3_600_000);
  const minutes = Math.floor(totalMs / 60_000) % 60;
  const seconds = Math.floor(totalMs / 1000) % 60;
  const ms = totalMs % 1000;
  return `${pad(hours, 2)}:${pad(minutes, 2)}:${pad(seconds, 2)}${decimalMark}${pad(ms, 3)}`;
}

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}

// A blank line ends a cue in both SRT and WebVTT, so cue text may hold none.
function oneParagraph(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join('\n');
}

function escapeVtt(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
