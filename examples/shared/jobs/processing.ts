/**
 * One unit of work for a job, shared by the BullMQ worker and POST /admin/jobs/:id/process.
 * Bulk job (an items hold): one video -> its transcript and, with comments, its Top page ->
 * one tollgate.holds.settle with the video id as item id (docs/example-service.md#bulk-jobs): delivered, spending the
 * transcript's credit and the comment credit when the Top page was nonempty, or failed with
 * `video_unavailable` / `no_captions`. Collection (a budget hold): one comments page -> one
 * tollgate.holds.spend of 1 credit when the page is nonempty, 0 when it is empty or failed.
 * A result tollgate refuses (job canceled, ended or lease lapsed) is not saved.
 */
import type { Hold, Tollgate } from 'tollgate';
import type { JobMeta, JobStore } from './jobStore.ts';
import { commentsPageOrNull, isPlatformError, type CommentsPage, type Transcript, type VideoPlatform } from '../platform/index.ts';

export interface WorkDeps {
  tollgate: Tollgate;
  platform: VideoPlatform;
  store: JobStore;
}

/** processed: one unit done; idle: nothing left to hand out; ended: the job takes no more. */
export type StepOutcome = 'processed' | 'idle' | 'ended';

type TranscriptResult = 'delivered' | 'video_unavailable' | 'no_captions';
type CommentPageResult = 'nonempty' | 'empty' | 'failed';

function commentPageResult(page: CommentsPage | null): CommentPageResult {
  return page === null ? 'failed' : page.comments.length > 0 ? 'nonempty' : 'empty';
}

export async function processBulkItem(deps: WorkDeps, jobId: string, meta: JobMeta): Promise<StepOutcome> {
  const item = await deps.store.claimNext(jobId);
  if (item === null) return 'idle';
  const { outcome, transcript } = await fetchTranscript(deps.platform, item.videoId);
  let commentPage: CommentPageResult | undefined;
  let comments: CommentsPage | null = null;
  if (meta.includeComments && outcome === 'delivered') {
    comments = await commentsPageOrNull(deps.platform, item.videoId, { sort: 'top' });
    commentPage = commentPageResult(comments);
  }
  // The video is the item: a worker that retries it counts it once.
  const settlement =
    outcome === 'delivered' ? { itemId: item.videoId, optionalSpent: commentPage === 'nonempty' ? 1 : 0 } : { itemId: item.videoId, failed: outcome };
  const settled = await deps.tollgate.holds.settle(meta.account, jobId, settlement);
  if (!settled.ok) return 'ended';
  if (settled.replayed) return 'processed';
  await deps.store.addResult(jobId, {
    index: item.index,
    video_id: item.videoId,
    transcript: outcome === 'delivered' ? { status: 'delivered', ...transcript } : { status: outcome },
    ...(commentPage === undefined ? {} : { comments: { status: commentPage, page: commentPage === 'nonempty' ? comments : null } }),
  });
  return 'processed';
}

async function fetchTranscript(platform: VideoPlatform, videoId: string): Promise<{ outcome: TranscriptResult; transcript?: Transcript }> {
  try {
    return { outcome: 'delivered', transcript: await platform.getTranscript(videoId) };
  } catch (error) {
    if (!isPlatformError(error)) throw error;
    // A video the platform cannot give us (gone, or an upstream failure) is refunded like an unavailable one.
    return { outcome: error.code === 'no_captions' ? 'no_captions' : 'video_unavailable' };
  }
}

/** Pages still to fetch: the Top pages in order, each followed by its comments' reply threads. */
interface CrawlState {
  queue: Array<{ pageToken?: string; replyTo?: string }>;
  /** Set once the collection has ended (limit used up, nothing left, or canceled). */
  done?: boolean;
}

export async function processCollectionPage(deps: WorkDeps, jobId: string, meta: JobMeta): Promise<StepOutcome> {
  const state = (await deps.store.readState<CrawlState>(jobId)) ?? { queue: [{}] };
  if (state.done) return 'ended';
  const next = state.queue.shift();
  if (next === undefined) {
    await deps.tollgate.holds.finish(meta.account, jobId);
    return 'ended';
  }
  const page = await commentsPageOrNull(deps.platform, meta.videoId!, { sort: 'top', ...next });
  const result = commentPageResult(page);
  // The page (its thread and token) is the item: a retried page counts once.
  const pageId = `${next.replyTo ?? 'top'}:${next.pageToken ?? 'first'}`;
  const settled = await deps.tollgate.holds.spend(meta.account, jobId, { itemId: pageId, amount: result === 'nonempty' ? 1 : 0 });
  if (!settled.ok) {
    await deps.store.writeState(jobId, { ...state, done: true });
    return 'ended';
  }
  if (page !== null && result === 'nonempty') {
    if (!settled.replayed) await deps.store.addResult(jobId, { page_kind: next.replyTo ? 'replies' : 'top', ...page });
    if (next.replyTo === undefined) {
      const threads = page.comments.filter((c) => c.reply_count > 0).map((c) => ({ replyTo: c.id }));
      const more = page.next_page_token ? [{ pageToken: page.next_page_token }] : [];
      state.queue = [...threads, ...state.queue, ...more];
    }
  }
  // Nothing left to crawl (a failed or empty first page included): end now, refunding the rest.
  if (isOpen(settled.hold) && state.queue.length === 0) await deps.tollgate.holds.finish(meta.account, jobId);
  state.done = !isOpen(settled.hold) || state.queue.length === 0;
  await deps.store.writeState(jobId, state);
  return 'processed';
}

export function isOpen(hold: Hold): boolean {
  return hold.status === 'open';
}
