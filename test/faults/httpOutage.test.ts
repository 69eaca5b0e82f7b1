// Redis outages seen over HTTP (docs/example-service.md#errors), against both example
// servers. Paused (SIGSTOP), Redis holds every connection open and answers nothing: each
// request that needs it answers 503 unavailable with Retry-After within about the service's
// timeoutMs, not never, and after SIGCONT the same server serves again. Down (killed), nothing
// a request told 503 issued runs later: not tollgate's scripts, not the service's own commands,
// not a BullMQ enqueue.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { JobStore } from '../../examples/shared/jobs/jobStore.ts';
import { createFakePlatform } from '../../examples/shared/platform/index.ts';
import { connectRedis } from '../../examples/shared/redis/client.ts';
import { JobRunner } from '../../examples/shared/jobs/worker.ts';
import { createTollgate, isTollgateError } from '../../src/index.ts';
import { ADAPTERS, type Harness, type Reply, type RequestOptions, startHarness, videoIds } from '../examples/contract/harness.ts';
import { uniquePrefix } from '../helpers/redis.ts';
import { type RedisServer, rawCommand, startRedisServer } from '../helpers/redisServer.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

const TIMEOUT_MS = 300;
// What a loaded CI machine may add to the timeout before the reply reaches the client.
const SLACK_MS = 700;
const VIDEO = 'dQw4w9WgXcQ';
const MCP_ACCEPT = { accept: 'application/json, text/event-stream' };

/** The pid of the redis-server on this port, so the test can pause it (SIGSTOP) and resume it. */
async function serverPid(port: number): Promise<number> {
  const match = /process_id:(\d+)/.exec(String(await rawCommand(port, ['INFO', 'server'])));
  if (!match) throw new Error(`no process_id in INFO server of port ${port}`);
  return Number(match[1]);
}

/** Polls check() until it holds (its errors count as not yet), or fails after timeoutMs. */
async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Sends every request at once; each reply with how long it took. A hung request fails after 5 s. */
async function timed(h: Harness, requests: Record<string, [string, RequestOptions?]>): Promise<Array<{ name: string; reply: Reply; ms: number }>> {
  return Promise.all(
    Object.entries(requests).map(async ([name, [path, options]]) => {
      const started = performance.now();
      const reply = await h.request(path, { ...options, timeoutMs: 5_000 }).catch((error: unknown) => {
        throw new Error(`${name}: no reply within 5 s (${String(error)})`);
      });
      return { name, reply, ms: performance.now() - started };
    }),
  );
}

function expectUnavailable(results: Array<{ name: string; reply: Reply; ms: number }>): void {
  for (const { name, reply, ms } of results) {
    expect(reply.status, `${name}: ${reply.text.slice(0, 200)}`).toBe(503);
    expect(reply.body.error.type, name).toBe('unavailable');
    expect(Number(reply.headers.get('retry-after')), name).toBeGreaterThanOrEqual(1);
    expect(reply.headers.get('x-request-id'), name).toBe(reply.body.request_id);
    expect(ms, `${name} answered within about the timeout`).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  }
}

describe.each(ADAPTERS)('$name server: Redis paused (SIGSTOP)', (adapter) => {
  let redis: RedisServer;
  let h: Harness;
  beforeAll(async () => {
    redis = await startRedisServer({ appendOnly: true });
    h = await startHarness(adapter, 'paused', { redisUrl: redis.url, timeoutMs: TIMEOUT_MS });
  });
  afterAll(async () => {
    await h?.close();
    await redis?.stop();
  });

  it('every request that needs Redis answers 503 unavailable within about timeoutMs; after SIGCONT the same server serves again', async () => {
    const { id, key } = await h.account('pro');
    const token = (await h.admin(`/admin/accounts/${id}/oauth-tokens`)).body.access_token as string;
    const login = await h.request('/web/login', { body: { api_key: key } });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const job = (await h.request('/jobs', { key, body: { video_ids: videoIds('vid', 3) } })).body.id as string;
    const collection = (await h.request('/web/collections', { body: { video_id: VIDEO, limit: 5 }, headers: { cookie } })).body.id as string;
    const before = (await h.service.tollgate.usage(id)).credits;

    const pid = await serverPid(redis.port);
    process.kill(pid, 'SIGSTOP');
    let results;
    try {
      results = await timed(h, {
        // API keys (checked together with the admit)
        'charged transcript (key)': [`/transcript/${VIDEO}`, { key }],
        'comments (key)': [`/api/v1/comments/${VIDEO}`, { key }],
        'free search (key), closed by default': ['/api/v1/search?q=cats', { key }],
        'usage (key)': ['/api/v1/usage', { key }],
        'new job (key)': ['/jobs', { key, body: { video_ids: videoIds('vid', 2) }, headers: { 'idempotency-key': 'paused-1' } }],
        'job list (key)': ['/jobs', { key }],
        'job results (key)': [`/jobs/${job}/results`, { key }],
        'web login': ['/web/login', { body: { api_key: key } }],
        // sessions
        'collection (session)': [`/web/collections/${collection}`, { headers: { cookie } }],
        'new collection (session)': ['/web/collections', { body: { video_id: VIDEO, limit: 3 }, headers: { cookie } }],
        // OAuth needs no Redis to verify: these reach tollgate and the job store
        'charged transcript (OAuth)': [`/transcript/${VIDEO}`, { key: token }],
        'job (OAuth)': [`/jobs/${job}`, { key: token }],
        'MCP tools/call (OAuth)': [
          '/mcp',
          {
            key: token,
            body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_transcript', arguments: { video_id: VIDEO } } },
            headers: MCP_ACCEPT,
          },
        ],
        // the host's own back office
        'admin: new account': ['/admin/accounts', { method: 'POST', body: { plan: 'pro' }, headers: { authorization: 'Bearer admin-token-for-tests' } }],
        'admin: process a job': [
          `/admin/jobs/${job}/process`,
          { method: 'POST', body: { count: 1 }, headers: { authorization: 'Bearer admin-token-for-tests' } },
        ],
      });
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expectUnavailable(results);

    // Back without a restart: what the paused server had read runs now (a counted admission,
    // harmless reads, an account nobody was told of); nothing was charged for a 503.
    await waitUntil('the same server to serve again', async () => (await h.request('/api/v1/usage', { key })).status === 200);
    const transcript = await h.request(`/transcript/${VIDEO}`, { key });
    expect(transcript.status).toBe(200);
    expect(transcript.headers.get('x-credits-charged')).toBe('1');
    expect((await h.request(`/jobs/${job}`, { key })).body.status).toBe('queued');
    const after = (await h.service.tollgate.usage(id)).credits;
    expect(after.spent).toBe(before.spent + 1);
    // The client's retry of the job it was refused is taken once.
    const retried = await h.request('/jobs', { key, body: { video_ids: videoIds('vid', 2) }, headers: { 'idempotency-key': 'paused-1' } });
    expect(retried.status).toBe(201);
    expect((await h.service.tollgate.usage(id)).credits.held).toBe(before.held + 2);
    expect((await h.service.tollgate.credits.reconcile(id)).matches).toBe(true);
  });
});

describe.each(ADAPTERS)('$name server: Redis down (killed)', (adapter) => {
  let redis: RedisServer;
  let h: Harness;
  beforeAll(async () => {
    redis = await startRedisServer({ appendOnly: true });
    h = await startHarness(adapter, 'down', { redisUrl: redis.url, timeoutMs: TIMEOUT_MS });
  });
  afterAll(async () => {
    await h?.close();
    await redis?.stop();
  });

  it('a request told 503 never runs later: no count, no charge, no cancel, no job once Redis is back', async () => {
    const { id, key } = await h.account('starter');
    const token = (await h.admin(`/admin/accounts/${id}/oauth-tokens`)).body.access_token as string;
    const job = (await h.request('/jobs', { key, body: { video_ids: videoIds('vid', 3) } })).body.id as string;
    const before = await h.service.tollgate.usage(id);

    await redis.kill('SIGKILL');
    expectUnavailable(
      await timed(h, {
        'charged transcript (OAuth)': [`/transcript/${VIDEO}`, { key: token }],
        'cancel (OAuth)': [`/jobs/${job}`, { key: token, method: 'DELETE' }],
        'new job (OAuth)': ['/jobs', { key: token, body: { video_ids: videoIds('vid', 2) } }],
        'MCP tools/call (OAuth)': [
          '/mcp',
          { key: token, body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_usage', arguments: {} } }, headers: MCP_ACCEPT },
        ],
      }),
    );
    await redis.restart();
    await waitUntil('the same server to serve again', async () => (await h.request('/api/v1/usage', { key })).status === 200);

    const after = await h.service.tollgate.usage(id);
    expect(after.credits).toEqual(before.credits);
    expect(after.rateLimit.remaining).toBe(before.rateLimit.remaining);
    expect(after.holds.active).toBe(1);
    expect((await h.request(`/jobs/${job}`, { key })).body.status).toBe('queued');
  });
});

describe('the job queue (BullMQ) during an outage', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer({ appendOnly: true });
  });
  afterAll(async () => {
    await redis?.stop();
  });

  async function runner(prefix: string) {
    const app = await connectRedis({ url: redis.url }, TIMEOUT_MS);
    const deps = {
      tollgate: createTollgate({ plans: EXAMPLE_PLANS, redis: app.scripts, prefix, timeoutMs: TIMEOUT_MS }),
      platform: createFakePlatform(),
      store: new JobStore(app, `${prefix}:ex`),
    };
    const queuePrefix = `{${prefix}:bull}`;
    const jobs = new JobRunner(deps, { mode: 'auto', redis: { url: redis.url }, queuePrefix, timeoutMs: TIMEOUT_MS, sweepEveryMs: 0 });
    jobs.start();
    const queued = async (jobId: string) => Number(await rawCommand(redis.port, ['EXISTS', `${queuePrefix}:tollgate-jobs:${jobId}`]));
    return { jobs, queued, close: async () => (await jobs.close(), await app.close()) };
  }

  it('an enqueue fails within about timeoutMs when Redis is paused, and at once when it is down; one told it failed while down never runs later', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const { jobs, queued, close } = await runner(uniquePrefix('queue'));
    try {
      await jobs.enqueue('job_before');
      expect(await queued('job_before')).toBe(1);

      const pid = await serverPid(redis.port);
      process.kill(pid, 'SIGSTOP');
      let paused: { error: unknown; ms: number };
      try {
        const started = performance.now();
        const error = await jobs.enqueue('job_paused').then(
          () => undefined,
          (e: unknown) => e,
        );
        paused = { error, ms: performance.now() - started };
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      expect(isTollgateError(paused.error, 'unavailable'), String(paused.error)).toBe(true);
      expect(paused.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);

      await redis.kill('SIGKILL');
      const started = performance.now();
      const down = await jobs.enqueue('job_down').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isTollgateError(down, 'unavailable'), String(down)).toBe(true);
      expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + SLACK_MS);

      await redis.restart();
      await waitUntil('the queue to take jobs again', async () => (await jobs.enqueue('job_after'), true));
      expect(await queued('job_after')).toBe(1);
      expect(await queued('job_down')).toBe(0);
    } finally {
      await close();
      errors.mockRestore();
    }
  });
});
