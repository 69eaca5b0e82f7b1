/**
 * Runs jobs (docs/example-service.md). WORKER=auto: each tollgate job becomes one BullMQ job on a
 * Redis-backed queue; a worker runs a bounded number of jobs at once, each with a bounded
 * number of videos in flight, and records one result per video. A job survives a restart:
 * BullMQ hands a stalled job to the next worker and the cursor in JobStore resumes where the
 * last video was handed out. WORKER=manual: nothing runs until POST /admin/jobs/:id/process.
 * In both modes a periodic tollgate.holds.sweep() ends jobs whose worker vanished, with refunds.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { JobMeta } from './jobStore.ts';
import { processBulkItem, processCollectionPage, type StepOutcome, type WorkDeps } from './processing.ts';
import { withDeadline, type RedisTarget } from '../redis/client.ts';

export type WorkerMode = 'auto' | 'manual';

export interface RunnerOptions {
  mode: WorkerMode;
  redis: RedisTarget;
  /**
   * BullMQ key prefix; give each deployment (or test file) its own. On a cluster it must be a
   * hash tag (`{tg:bull}`) so that every key of the queue lands in one slot.
   */
  queuePrefix: string;
  /** How long POST /jobs waits for the queue to take a job. Default 2000 ms. */
  timeoutMs?: number;
  /** Jobs run at once by this process. Default 2. */
  jobConcurrency?: number;
  /** Videos in flight per job. Default 4. */
  itemConcurrency?: number;
  /** How often to sweep lapsed jobs; 0 turns the timer off. Default 30 s. */
  sweepEveryMs?: number;
}

const QUEUE = 'tollgate-jobs';
/** How long close() waits for the worker to stop: its jobs stop after the unit in hand. */
const CLOSE_GRACE_MS = 5_000;

export class JobRunner {
  private queue?: Queue;
  private worker?: Worker;
  private connections: Array<Redis | Cluster> = [];
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
        this.deps.tollgate.holds.sweep().catch((error) => console.error('job sweep failed:', error));
      }, sweepEveryMs);
      this.sweepTimer.unref();
    }
    if (this.options.mode !== 'auto') return;
    const prefix = this.options.queuePrefix;
    // The queue is written to while a request waits: no offline queue and no resend after a
    // reconnect, so an enqueue during an outage fails at once instead of running later. The
    // worker is BullMQ's own loop: it keeps its commands across a reconnect, and BullMQ
    // requires maxRetriesPerRequest: null for it.
    const queueConnection = this.connect({ enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 });
    this.queue = new Queue(QUEUE, { connection: queueConnection, prefix });
    this.worker = new Worker(QUEUE, async (job) => this.runToEnd(String(job.data.jobId)), {
      connection: this.connect({ maxRetriesPerRequest: null }),
      prefix,
      concurrency: this.options.jobConcurrency ?? 2,
    });
    this.worker.on('error', (error) => console.error('job worker:', error));
  }

  private connect(options: RedisOptions): Redis | Cluster {
    const target = this.options.redis;
    let connection: Redis | Cluster;
    if ('url' in target) {
      connection = new Redis(target.url, options);
    } else {
      const { enableOfflineQueue, ...redisOptions } = options;
      const clusterOptions: ClusterOptions = { redisOptions, ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }) };
      connection = new Cluster(target.clusterNodes, clusterOptions);
    }
    // Commands reject while the connection is down; without a listener an error would crash the process.
    connection.on('error', () => {});
    this.connections.push(connection);
    return connection;
  }

  /**
   * Hands a newly reserved job to the queue (auto mode); manual mode waits for the admin.
   * Fails with StoreUnavailableError after timeoutMs; the job id makes a late add harmless.
   */
  async enqueue(jobId: string): Promise<void> {
    if (!this.queue) return;
    const added = this.queue.add('run', { jobId }, { jobId, attempts: 100, removeOnComplete: 1000, removeOnFail: 1000 });
    await withDeadline(`enqueue of ${jobId}`, this.options.timeoutMs ?? 2_000, added);
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
    // BullMQ's close waits for its blocking connection to end, and ioredis never ends one
    // caught between two reconnect attempts (its retry is dropped, no socket is left to close):
    // after an outage that wait can last forever, so it is bounded.
    if (this.worker) await Promise.race([this.worker.close(), sleep(CLOSE_GRACE_MS, undefined, { ref: false })]);
    await this.queue?.close();
    for (const connection of this.connections) connection.disconnect();
  }
}
