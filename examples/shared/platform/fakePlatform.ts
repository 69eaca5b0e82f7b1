/**
 * The fake upstream platform: deterministic, offline, and failing in the ways docs/example-service.md#the-fake-video-platform
 * names by id prefix. Checks run in a fixed order: the request's own parameters first
 * (400), then what the video's prefix says (404, 502), then the data.
 */
import { channelVideoIds, playlistVideoIds, searchVideos } from './catalog.ts';
import { assertTopLevelCommentId, COMMENT_PAGES, emptyPage, parseCommentSort, replyPage, topLevelPage } from './comments.ts';
import { InvalidRequestError, NoCaptionsError, UpstreamError, VideoUnavailableError } from './errors.ts';
import { assertChannelId, assertPlaylistId, assertVideoId, videoBehaviour } from './ids.ts';
import { readPageToken } from './pageTokens.ts';
import { deriveTranscript } from './transcripts.ts';
import type { CommentsPage, CommentsRequest, Transcript, Video, VideoPlatform } from './types.ts';
import { deriveVideo } from './videos.ts';

export interface FakePlatformOptions {
  /** Delay before every answer, to make concurrency visible in demos. Default 0. */
  latencyMs?: number;
}

export function createFakePlatform(options: FakePlatformOptions = {}): VideoPlatform {
  const latencyMs = options.latencyMs ?? 0;
  if (!Number.isFinite(latencyMs) || latencyMs < 0) {
    throw new RangeError(`latencyMs must be a finite number >= 0, got ${latencyMs}`);
  }
  const answerLater = (): Promise<void> => (latencyMs === 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, latencyMs)));

  /** A video the platform can show: valid id, not an "unavail" one. */
  const availableVideo = (videoId: unknown): string => {
    const id = assertVideoId(videoId);
    if (videoBehaviour(id) === 'unavailable') throw new VideoUnavailableError(id);
    return id;
  };

  return {
    async getVideo(videoId: string): Promise<Video> {
      await answerLater();
      return deriveVideo(availableVideo(videoId));
    },

    async getTranscript(videoId: string): Promise<Transcript> {
      await answerLater();
      const id = availableVideo(videoId);
      if (videoBehaviour(id) === 'no_captions') throw new NoCaptionsError(id);
      return deriveTranscript(deriveVideo(id));
    },

    async getComments(videoId: string, request: CommentsRequest): Promise<CommentsPage> {
      await answerLater();
      const id = assertVideoId(videoId);
      const sort = parseCommentSort(request?.sort);
      // An empty query parameter means "not given", as it does for most HTTP APIs.
      const pageToken = request.pageToken || undefined;
      const replyTo = request.replyTo || undefined;
      if (pageToken !== undefined && replyTo !== undefined) {
        throw new InvalidRequestError('page_token', 'A reply thread is a single page: page_token cannot be combined with reply_to');
      }
      const page = pageToken === undefined ? 1 : readPageToken(pageToken, id, sort, COMMENT_PAGES);
      if (replyTo !== undefined) assertTopLevelCommentId(replyTo);

      switch (videoBehaviour(id)) {
        case 'unavailable':
          throw new VideoUnavailableError(id);
        case 'comments_error':
          throw new UpstreamError(`Fetching the comments of video ${id} failed upstream`);
        case 'no_comments':
          return emptyPage(id, sort, replyTo);
        default: {
          const video = deriveVideo(id);
          return replyTo === undefined ? topLevelPage(video, sort, page) : replyPage(video, sort, replyTo);
        }
      }
    },

    async listChannelVideos(channelId: string): Promise<string[]> {
      await answerLater();
      return channelVideoIds(assertChannelId(channelId));
    },

    async listPlaylistVideos(playlistId: string): Promise<string[]> {
      await answerLater();
      return playlistVideoIds(assertPlaylistId(playlistId));
    },

    async search(query: string): Promise<Video[]> {
      await answerLater();
      return searchVideos(query);
    },
  };
}
