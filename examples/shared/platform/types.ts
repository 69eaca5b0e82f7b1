/**
 * The shape of an upstream video platform, as the example servers use it. The fake in
 * this folder implements it; a client for a real platform would implement the same
 * interface and throw the errors from `errors.ts`.
 */

export interface Video {
  id: string;
  title: string;
  channel_id: string;
  duration_seconds: number;
  /** ISO 8601, UTC. */
  published_at: string;
}

export interface TranscriptSegment {
  /** Seconds from the start of the video, millisecond precision. */
  start: number;
  /** Seconds, millisecond precision. */
  duration: number;
  text: string;
}

export interface Transcript {
  video_id: string;
  language: string;
  /** In playback order; segments never overlap. */
  segments: TranscriptSegment[];
}

export type CommentSort = 'top' | 'newest';

export interface Comment {
  id: string;
  author: string;
  text: string;
  like_count: number;
  reply_count: number;
  /** ISO 8601, UTC. */
  published_at: string;
}

/**
 * One page as the platform returns it. A page is "empty" when `comments` is empty; the
 * service charges only for nonempty pages (docs/example-service.md#transcripts-and-comments).
 */
export interface CommentsPage {
  video_id: string;
  sort: CommentSort;
  comments: Comment[];
  /** Token for the next page of the same video and sort, or null on the last page. */
  next_page_token: string | null;
  /** Set on a reply thread: the id of the comment whose replies these are. */
  reply_to?: string;
}

export interface CommentsRequest {
  sort: CommentSort;
  /** A `next_page_token` from an earlier page; absent (or empty) for the first page. */
  pageToken?: string;
  /** The id of a top-level comment: asks for its reply thread instead of a page. */
  replyTo?: string;
}

export interface VideoPlatform {
  getVideo(videoId: string): Promise<Video>;
  getTranscript(videoId: string): Promise<Transcript>;
  getComments(videoId: string, request: CommentsRequest): Promise<CommentsPage>;
  /** The ids of a channel's videos, some of which may be unavailable or lack captions. */
  listChannelVideos(channelId: string): Promise<string[]>;
  /** The ids of a playlist's videos, some of which may be unavailable or lack captions. */
  listPlaylistVideos(playlistId: string): Promise<string[]>;
  /** Up to 10 available videos matching the query. */
  search(query: string): Promise<Video[]>;
}
