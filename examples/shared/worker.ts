/**
 * Runs jobs (SPEC §6, §9). WORKER=auto: each tollgate job becomes one BullMQ job on a
 * Redis-backed queue; a worker runs a bounded number of jobs at once, each with a bounded
 * number of videos in flight, and records one result per video. A job survives a restart:
 * BullMQ hands a stalled job to the next worker and the cursor in JobStore resumes where the
 * last video was handed out. WORKER=manual: nothing runs until POST /admin/jobs/:id/process.
 * In both modes a periodic tollgate.jobs.sweep() ends jobs whose worker vanished, with refunds.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { JobMeta } from './jobStore.ts';
import { processBulkItem, processCollectionPage, type StepOutcome, type WorkDeps } from './processing.ts';

export type WorkerMode = 'auto' | 'manual';

export interface RunnerOptions {
  mode: WorkerMode;
  redisUrl: string;
  /** BullMQ key prefix; give each deployment (or test file) its own. */
  queuePrefix: string;
  /** Jobs run at once by this process. Default 2. */
  jobConcurrency?: number;
  /** Videos in flight per job. Default 4. */
  itemConcurrency?: number;
  /** How often to sweep lapsed jobs; 0 turns the timer off. Default 30 s. */
  sweepEveryMs?: number;
}

const QUEUE = 'tollgate-jobs';

export class JobRunner {
  private queue?: Queue;
  private worker?: Worker;
  private connection?: Redis;
  private sweepTimer?: NodeJS.Timeout;
  private closing = false;

  constructor(
    private readonly deps: WorkDeps,
    private readonly options: RunnerOptions,
  ) {}

  start(): void {
    const sweepEveryMs = this.options.sweepEveryMs ?? 30_000;
    if (sweepEveryMs > 0) {
      this.sweepTimer = setInterval(() => {
        this.deps.tollgate.jobs.sweep().catch((error) => console.error('job sweep failed:', error));
      }, sweepEveryMs);
      this.sweepTimer.unref();
    }
    if (this.options.mode !== 'auto') return;
    this.connection = new Redis(this.options.redisUrl, { maxRetriesPerRequest: null });
    this.connection.on('error', () => {});
    const prefix = this.options.queuePrefix;
    this.queue = new Queue(QUEUE, { connection: this.connection, prefix });
    this.worker = new Worker(QUEUE, async (job) => this.runToEnd(String(job.data.jobId)), {
      connection: this.connection,
      prefix,
      concurrency: this.options.jobConcurrency ?? 2,
    });
    this.worker.on('error', (error) => console.error('job worker:', error));
  }

  /** Hands a newly reserved job to the queue (auto mode); manual mode waits for the admin. */
  async enqueue(jobId: string): Promise<void> {
    if (!this.queue) return;
    await this.queue.add('run', { jobId }, { jobId, attempts: 100, removeOnComplete: 1000, removeOnFail: 1000 });
  }

  /** Processes up to `count` units of a job now (videos, or pages of a collection). */
  async process(jobId: string, meta: JobMeta, count: number): Promise<number> {
    let processed = 0;
    while (processed < count) {
      const outcome = await this.step(jobId, meta);
      if (outcome !== 'processed') break;
      processed++;
    }
    return processed;
  }

  private async runToEnd(jobId: string): Promise<void> {
    const meta = await this.deps.store.meta(jobId);
    if (meta === null) return;
    const lanes = meta.kind === 'bulk' ? (this.options.itemConcurrency ?? 4) : 1;
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        while (!this.closing && (await this.step(jobId, meta)) === 'processed');
      }),
    );
    // Stopping mid-job: fail this attempt so the queue hands the job to the next worker, which
    // resumes from the cursor. Every video started here was recorded before the lanes stopped.
    if (this.closing) throw new Error(`worker stopping; job ${jobId} goes back to the queue`);
  }

  private async step(jobId: string, meta: JobMeta): Promise<StepOutcome> {
    if (meta.kind === 'bulk') return processBulkItem(this.deps, jobId, meta);
    const release = await this.deps.store.lock(jobId, 30_000);
    if (release === null) return 'idle';
    try {
      return await processCollectionPage(this.deps, jobId, meta);
    } finally {
      await release();
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.sweepTimer);
    await this.worker?.close();
    await this.queue?.close();
    this.connection?.disconnect();
  }
}
