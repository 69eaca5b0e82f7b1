/**
 * What the example servers keep beside tollgate's own job record: which account and videos a
 * job is for, a cursor handing each video to exactly one worker, a collection's crawl state,
 * and the saved results that GET /jobs/:id/results exports for free. Kept for 7 days.
 * Every key of a job carries the hash tag {<job id>}, so the commands that touch several of
 * them (MULTI, DEL) stay in one slot of a Redis Cluster.
 */
import type { AppRedis } from '../redis/client.ts';

const TTL_S = 7 * 24 * 3600;

export interface JobMeta {
  account: string;
  kind: 'bulk' | 'collection';
  includeComments: boolean;
  /** The collection's video; null for bulk jobs. */
  videoId: string | null;
}

export class JobStore {
  constructor(
    private readonly redis: AppRedis,
    private readonly prefix: string,
  ) {}

  /** Written before the credits are reserved, so a reserved job always has its videos. */
  async saveBulk(jobId: string, account: string, videos: string[], includeComments: boolean): Promise<void> {
    const k = this.keys(jobId);
    await this.redis.atomically([
      ['HSET', k.meta, 'account', account, 'kind', 'bulk', 'comments', includeComments ? '1' : '0'],
      ['RPUSH', k.videos, ...videos],
      ['EXPIRE', k.meta, String(TTL_S)],
      ['EXPIRE', k.videos, String(TTL_S)],
    ]);
  }

  async saveCollection(jobId: string, account: string, videoId: string): Promise<void> {
    const k = this.keys(jobId);
    await this.redis.atomically([
      ['HSET', k.meta, 'account', account, 'kind', 'collection', 'video', videoId],
      ['EXPIRE', k.meta, String(TTL_S)],
    ]);
  }

  /** Forgets a job whose reservation was refused. */
  async discard(jobId: string): Promise<void> {
    const k = this.keys(jobId);
    await this.redis.del([k.meta, k.videos, k.cursor, k.results, k.state]);
  }

  async meta(jobId: string): Promise<JobMeta | null> {
    const f = await this.redis.hGetAll(this.keys(jobId).meta);
    if (typeof f.account !== 'string') return null;
    return {
      account: f.account,
      kind: f.kind === 'collection' ? 'collection' : 'bulk',
      includeComments: f.comments === '1',
      videoId: typeof f.video === 'string' ? f.video : null,
    };
  }

  /** Hands out the job's next video, each to exactly one caller; null when all are taken. */
  async claimNext(jobId: string): Promise<{ index: number; videoId: string } | null> {
    const k = this.keys(jobId);
    const index = (await this.redis.incr(k.cursor)) - 1;
    if (index === 0) await this.redis.expire(k.cursor, TTL_S);
    const videoId = await this.redis.lIndex(k.videos, index);
    return typeof videoId === 'string' ? { index, videoId } : null;
  }

  async addResult(jobId: string, result: unknown): Promise<void> {
    const k = this.keys(jobId);
    await this.redis.atomically([
      ['RPUSH', k.results, JSON.stringify(result)],
      ['EXPIRE', k.results, String(TTL_S)],
    ]);
  }

  async results(jobId: string, offset: number, limit: number): Promise<{ total: number; items: unknown[] }> {
    const k = this.keys(jobId);
    const [total, raw] = await Promise.all([
      this.redis.lLen(k.results),
      limit === 0 ? Promise.resolve<string[]>([]) : this.redis.lRange(k.results, offset, offset + limit - 1),
    ]);
    return { total, items: raw.map((item) => JSON.parse(item) as unknown) };
  }

  async readState<T>(jobId: string): Promise<T | null> {
    const raw = await this.redis.get(this.keys(jobId).state);
    return typeof raw === 'string' ? (JSON.parse(raw) as T) : null;
  }

  async writeState(jobId: string, state: unknown): Promise<void> {
    await this.redis.set(this.keys(jobId).state, JSON.stringify(state), { EX: TTL_S });
  }

  /** A short exclusive hold, so one collection is crawled by one worker at a time. */
  async lock(jobId: string, ms: number): Promise<(() => Promise<void>) | null> {
    const key = this.keys(jobId).lock;
    const token = `${process.pid}:${Math.random()}`;
    if (!(await this.redis.set(key, token, { NX: true, PX: ms }))) return null;
    return async () => {
      if ((await this.redis.get(key)) === token) await this.redis.del([key]);
    };
  }

  private keys(jobId: string) {
    const base = `${this.prefix}:job:{${jobId}}`;
    return {
      meta: base,
      videos: `${base}:videos`,
      cursor: `${base}:cursor`,
      results: `${base}:results`,
      state: `${base}:state`,
      lock: `${base}:lock`,
    };
  }
}
