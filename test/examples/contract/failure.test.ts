// SPEC §8 failure policy over HTTP against both example servers: with Redis unreachable the
// servers fail closed (503 unavailable + Retry-After), serve no unpaid work, and recover when
// Redis is back.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RedisServer, startRedisServer } from '../../helpers/redisServer.ts';
import { ADAPTERS, type Harness, startHarness, videoIds } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';

describe.each(ADAPTERS)('$name server: quota store unreachable', (adapter) => {
  let redis: RedisServer;
  let h: Harness;
  beforeAll(async () => {
    redis = await startRedisServer({ appendOnly: true });
    h = await startHarness(adapter, 'failure', { redisUrl: redis.url });
  });
  afterAll(async () => {
    await h?.close();
    await redis?.stop();
  });

  it('charged and free endpoints answer 503 unavailable with Retry-After, send nothing unpaid, and recover', async () => {
    const { id, key } = await h.account('starter');
    expect((await h.request(`/transcript/${VIDEO}`, { key })).status).toBe(200);
    await redis.kill('SIGKILL');

    for (const r of [
      await h.request(`/transcript/${VIDEO}`, { key }),
      await h.request(`/api/v1/comments/${VIDEO}`, { key }),
      await h.request('/jobs', { key, body: { video_ids: videoIds('vid', 2) } }),
      await h.request('/api/v1/usage', { key }),
    ]) {
      expect(r.status).toBe(503);
      expect(r.body.error.type).toBe('unavailable');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(r.text).not.toContain('segments');
    }

    await redis.restart();
    await vi.waitFor(async () => expect((await h.request('/api/v1/usage', { key })).status).toBe(200), { timeout: 20_000, interval: 100 });
    expect((await h.service.tollgate.usage(id)).credits).toMatchObject({ balance: 999, spent: 1, held: 0 });
  });
});
