/**
 * Upstream failures as typed errors. Each has a stable `name`, an error `code` from
 * docs/example-service.md#errors and the HTTP `status` it maps to, so a handler can turn any of them into an
 * error body without a table of its own.
 */
import type { CommentsPage, CommentsRequest, VideoPlatform } from './types.ts';

export type PlatformErrorCode = 'invalid_request' | 'video_unavailable' | 'no_captions' | 'upstream_error';

/** Every error name below with its code; `isPlatformError` checks against this. */
const CODE_BY_NAME: Readonly<Record<string, PlatformErrorCode>> = {
  InvalidRequestError: 'invalid_request',
  InvalidIdError: 'invalid_request',
  InvalidFormatError: 'invalid_request',
  VideoUnavailableError: 'video_unavailable',
  NoCaptionsError: 'no_captions',
  UpstreamError: 'upstream_error',
  ConversionError: 'upstream_error',
};

export abstract class PlatformError extends Error {
  abstract readonly code: PlatformErrorCode;
  abstract readonly status: number;
}

/** A request parameter the platform refuses: 400 `invalid_request`. */
export class InvalidRequestError extends PlatformError {
  override readonly name: string = 'InvalidRequestError';
  readonly code = 'invalid_request';
  readonly status = 400;
  /** The parameter at fault, in the API's words: `video_id`, `page_token`, `sort`, ... */
  readonly param: string;

  constructor(param: string, message: string) {
    super(message);
    this.param = param;
  }
}

/** A malformed or unknown id: video, channel, playlist, comment or page token. */
export class InvalidIdError extends InvalidRequestError {
  override readonly name: string = 'InvalidIdError';
}

/** A transcript format other than json, text, srt and vtt. */
export class InvalidFormatError extends InvalidRequestError {
  override readonly name: string = 'InvalidFormatError';
}

export class VideoUnavailableError extends PlatformError {
  override readonly name = 'VideoUnavailableError';
  readonly code = 'video_unavailable';
  readonly status = 404;
  readonly videoId: string;

  constructor(videoId: string) {
    super(`Video ${videoId} is unavailable`);
    this.videoId = videoId;
  }
}

export class NoCaptionsError extends PlatformError {
  override readonly name = 'NoCaptionsError';
  readonly code = 'no_captions';
  readonly status = 404;
  readonly videoId: string;

  constructor(videoId: string) {
    super(`Video ${videoId} has no captions`);
    this.videoId = videoId;
  }
}

/** The platform failed to answer: 502 `upstream_error`. */
export class UpstreamError extends PlatformError {
  override readonly name: string = 'UpstreamError';
  readonly code = 'upstream_error';
  readonly status = 502;
}

/**
 * Converting a fetched transcript failed. Reported like any other upstream failure (502)
 * because the client can do nothing about it but retry later; a failed piece of work charges nothing.
 */
export class ConversionError extends UpstreamError {
  override readonly name: string = 'ConversionError';
  readonly videoId: string;
  readonly format: string;

  constructor(videoId: string, format: string) {
    super(`Converting the transcript of video ${videoId} to ${format} failed`);
    this.videoId = videoId;
    this.format = format;
  }
}

/**
 * True for any error above, including ones thrown by another copy of this module
 * (a duplicate install), which `instanceof` would miss.
 */
export function isPlatformError(error: unknown): error is PlatformError {
  if (typeof error !== 'object' || error === null) return false;
  const { name, code, status, message } = error as Record<string, unknown>;
  return (
    typeof name === 'string' && Object.hasOwn(CODE_BY_NAME, name) && CODE_BY_NAME[name] === code && typeof status === 'number' && typeof message === 'string'
  );
}

/** A comments page, or null when the platform cannot give it (a platform error); other errors are thrown. */
export async function commentsPageOrNull(platform: VideoPlatform, videoId: string, request: CommentsRequest): Promise<CommentsPage | null> {
  try {
    return await platform.getComments(videoId, request);
  } catch (error) {
    if (!isPlatformError(error)) throw error;
    return null;
  }
}
