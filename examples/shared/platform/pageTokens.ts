/**
 * Continuation tokens for comment pages. A token names its sort and page and carries a
 * check derived from the video, so a token only works for the video and sort it came from.
 */
import { InvalidIdError } from './errors.ts';
import { rngFor } from './hash.ts';
import { shown } from './ids.ts';
import type { CommentSort } from './types.ts';

const TOKEN = /^(top|newest)-(\d{1,2})-[A-Za-z0-9_-]{10}$/;

export function makePageToken(videoId: string, sort: CommentSort, page: number): string {
  return `${sort}-${page}-${rngFor('page-token', videoId, sort, page).chars(10)}`;
}

/** The page number a token points at, if it is a token this video and sort handed out. */
export function readPageToken(token: string, videoId: string, sort: CommentSort, lastPage: number): number {
  const match = TOKEN.exec(token);
  const page = Number(match?.[2]);
  if (match === null || match[1] !== sort || page < 2 || page > lastPage || makePageToken(videoId, sort, page) !== token) {
    throw new InvalidIdError('page_token', `Invalid page_token ${shown(token)}: not a next_page_token of the ${sort} comments of video ${videoId}`);
  }
  return page;
}
