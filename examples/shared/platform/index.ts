/** The fake video platform the example servers fetch from, and the pieces they share. */
export type {
  Comment,
  CommentSort,
  CommentsPage,
  CommentsRequest,
  Transcript,
  TranscriptSegment,
  Video,
  VideoPlatform,
} from './types.ts';
export {
  commentsPageOrNull,
  ConversionError,
  InvalidFormatError,
  InvalidIdError,
  InvalidRequestError,
  isPlatformError,
  NoCaptionsError,
  PlatformError,
  type PlatformErrorCode,
  UpstreamError,
  VideoUnavailableError,
} from './errors.ts';
export {
  assertChannelId,
  assertPlaylistId,
  assertVideoId,
  isChannelId,
  isPlaylistId,
  isVideoId,
  VIDEO_ID_PREFIXES,
  type VideoBehaviour,
  videoBehaviour,
} from './ids.ts';
export {
  COMMENT_PAGES,
  COMMENT_SORTS,
  COMMENTS_PER_PAGE,
  MAX_REPLIES,
  parseCommentSort,
} from './comments.ts';
export { MAX_LISTING_SIZE, MAX_SEARCH_RESULTS, MIN_LISTING_SIZE } from './catalog.ts';
export {
  type ConvertedTranscript,
  convertTranscript,
  parseTranscriptFormat,
  TRANSCRIPT_FORMATS,
  type TranscriptFormat,
} from './formats.ts';
export { createFakePlatform, type FakePlatformOptions } from './fakePlatform.ts';
