/**
 * One unit of work for a job, shared by the BullMQ worker and POST /admin/jobs/:id/process.
 * Bulk job: one video -> its transcript and, with comments, its Top page -> one
 * tollgate.jobs.recordResult (SPEC §6). Collection: one comments page -> one recordPage.
 * A result tollgate refuses (job canceled, ended or lease lapsed) is not saved.
 */
import type { CommentPageResult, Job, Tollgate, TranscriptResult } from '../../src/index.ts';
import type { JobMeta, JobStore } from './jobStore.ts';
import { isPlatformError, type CommentsPage, type Transcript, type VideoPlatform } from './platform/index.ts';

export interface WorkDeps {
  tollgate: Tollgate;
  platform: VideoPlatform;
  store: JobStore;
}

/** processed: one unit done; idle: nothing left to hand out; ended: the job takes no more. */
export type StepOutcome = 'processed' | 'idle' | 'ended';

export async function processBulkItem(deps: WorkDeps, jobId: string, meta: JobMeta): Promise<StepOutcome> {
  const item = await deps.store.claimNext(jobId);
  if (item === null) return 'idle';
  const { outcome, transcript } = await fetchTranscript(deps.platform, item.videoId);
  let commentPage: CommentPageResult | undefined;
  let comments: CommentsPage | undefined;
  if (meta.includeComments && outcome === 'delivered') {
    try {
      comments = await deps.platform.getComments(item.videoId, { sort: 'top' });
      commentPage = comments.comments.length > 0 ? 'nonempty' : 'empty';
    } catch (error) {
      if (!isPlatformError(error)) throw error;
      commentPage = 'failed';
    }
  }
  // The item's position is its id: a worker that retries this video counts it once.
  const settled = await deps.tollgate.jobs.recordResult(meta.account, jobId, { transcript: outcome, commentPage, itemId: String(item.index) });
  if (!settled.accepted) return 'ended';
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
    await deps.tollgate.jobs.finish(meta.account, jobId);
    return 'ended';
  }
  let page: CommentsPage | null = null;
  try {
    page = await deps.platform.getComments(meta.videoId!, { sort: 'top', ...next });
  } catch (error) {
    if (!isPlatformError(error)) throw error;
  }
  const result: CommentPageResult = page === null ? 'failed' : page.comments.length > 0 ? 'nonempty' : 'empty';
  // The page's place in the crawl is its id: a retried page counts once.
  const settled = await deps.tollgate.jobs.recordPage(meta.account, jobId, result, { itemId: `${next.replyTo ?? 'top'}:${next.pageToken ?? 'first'}` });
  if (!settled.accepted) {
    await deps.store.writeState(jobId, { ...state, done: true });
    return 'ended';
  }
  if (page !== null && result === 'nonempty') {
    await deps.store.addResult(jobId, { page_kind: next.replyTo ? 'replies' : 'top', ...page });
    if (next.replyTo === undefined) {
      const threads = page.comments.filter((c) => c.reply_count > 0).map((c) => ({ replyTo: c.id }));
      const more = page.next_page_token ? [{ pageToken: page.next_page_token }] : [];
      state.queue = [...threads, ...state.queue, ...more];
    }
  }
  // Nothing left to crawl (a failed or empty first page included): end now, refunding the rest.
  if (isOpen(settled.job) && state.queue.length === 0) await deps.tollgate.jobs.finish(meta.account, jobId);
  state.done = !isOpen(settled.job) || state.queue.length === 0;
  await deps.store.writeState(jobId, state);
  return 'processed';
}

export function isOpen(job: Job): boolean {
  return job.status === 'queued' || job.status === 'running';
}
