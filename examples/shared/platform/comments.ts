/**
 * Comment pages, derived from the video id. Every ordinary video has the same shape:
 * 60 top-level comments shown as 3 pages of 20 (Top orders them by likes, Newest by date),
 * and each top-level comment has a one-page reply thread of 1 to 10 replies.
 */
import { InvalidIdError, InvalidRequestError } from './errors.ts';
import { ID_ALPHABET, type Rng, rngFor } from './hash.ts';
import { shown } from './ids.ts';
import { makePageToken } from './pageTokens.ts';
import type { Comment, CommentSort, CommentsPage, Video } from './types.ts';
import { PLATFORM_NOW_MS } from './videos.ts';
import { authorName, commentText, replyText } from './words.ts';

export const COMMENTS_PER_PAGE = 20;
export const COMMENT_PAGES = 3;
export const MAX_REPLIES = 10;
export const COMMENT_SORTS: readonly CommentSort[] = ['top', 'newest'];

const TOP_LEVEL_COUNT = COMMENTS_PER_PAGE * COMMENT_PAGES;
// "Ug" + 23 derived characters + one character holding the comment's index, which keeps
// the ids of a video distinct and lets a reply_to be checked without listing them all.
const TOP_LEVEL_ID = /^Ug[A-Za-z0-9_-]{24}$/;
const DAY_MS = 86_400_000;

const ORDER: Record<CommentSort, (a: Comment, b: Comment) => number> = {
  top: (a, b) => b.like_count - a.like_count || compare(a.id, b.id),
  newest: (a, b) => compare(b.published_at, a.published_at) || compare(a.id, b.id),
};

export function parseCommentSort(value: unknown): CommentSort {
  if (value === 'top' || value === 'newest') return value;
  throw new InvalidRequestError('sort', `Invalid sort ${shown(value)}: expected "top" or "newest"`);
}

/** A reply thread is asked for by the id of a top-level comment; replies have none. */
export function assertTopLevelCommentId(value: unknown): string {
  if (typeof value === 'string' && TOP_LEVEL_ID.test(value)) return value;
  throw new InvalidIdError('reply_to', `Invalid reply_to ${shown(value)}: expected the id of a top-level comment`);
}

export function topLevelPage(video: Video, sort: CommentSort, page: number): CommentsPage {
  const ordered = Array.from({ length: TOP_LEVEL_COUNT }, (_, index) => topLevelComment(video, index));
  ordered.sort(ORDER[sort]);
  return {
    video_id: video.id,
    sort,
    comments: ordered.slice((page - 1) * COMMENTS_PER_PAGE, page * COMMENTS_PER_PAGE),
    next_page_token: page < COMMENT_PAGES ? makePageToken(video.id, sort, page + 1) : null,
  };
}

/** The replies to one of the video's top-level comments, oldest first, on a single page. */
export function replyPage(video: Video, sort: CommentSort, parentId: string): CommentsPage {
  const index = ID_ALPHABET.indexOf(parentId.charAt(parentId.length - 1));
  const parent = index < TOP_LEVEL_COUNT ? topLevelComment(video, index) : undefined;
  if (parent === undefined || parent.id !== parentId) {
    throw new InvalidIdError('reply_to', `Invalid reply_to ${shown(parentId)}: not a comment of video ${video.id}`);
  }
  const replies = Array.from({ length: parent.reply_count }, (_, i) => reply(parent, i));
  replies.sort((a, b) => compare(a.published_at, b.published_at) || compare(a.id, b.id));
  return { video_id: video.id, sort, comments: replies, next_page_token: null, reply_to: parentId };
}

export function emptyPage(videoId: string, sort: CommentSort, replyTo?: string): CommentsPage {
  const page: CommentsPage = { video_id: videoId, sort, comments: [], next_page_token: null };
  if (replyTo !== undefined) page.reply_to = replyTo;
  return page;
}

function topLevelComment(video: Video, index: number): Comment {
  const rng = rngFor('comment', video.id, index);
  return {
    id: `Ug${rng.chars(23)}${ID_ALPHABET.charAt(index)}`,
    author: authorName(rng),
    text: commentText(rng),
    like_count: Math.floor(rng.next() ** 3 * 5000),
    reply_count: rng.int(1, MAX_REPLIES),
    // A day before "now" at the latest, so every reply can come after its comment.
    published_at: instantBetween(rng, Date.parse(video.published_at), PLATFORM_NOW_MS - DAY_MS),
  };
}

function reply(parent: Comment, index: number): Comment {
  const rng = rngFor('reply', parent.id, index);
  return {
    id: `${parent.id}.${rng.chars(21)}${ID_ALPHABET.charAt(index)}`,
    author: authorName(rng),
    text: replyText(rng),
    like_count: Math.floor(rng.next() ** 3 * 200),
    reply_count: 0,
    published_at: instantBetween(rng, Date.parse(parent.published_at), PLATFORM_NOW_MS),
  };
}

/** An ISO instant, whole seconds, at least a minute after `fromMs` and before `toMs`. */
function instantBetween(rng: Rng, fromMs: number, toMs: number): string {
  const seconds = rng.int(60, Math.floor((toMs - fromMs) / 1000) - 1);
  return new Date(fromMs + seconds * 1000).toISOString();
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
