// The failure policy over HTTP against both example servers: with Redis unreachable the
// servers fail closed (503 unavailable + Retry-After), serve no unpaid work, and recover when
// Redis is back. With failOpenFreeEndpoints (FAIL_OPEN_FREE=1) the free catalog reads are
// still served to callers verified recently; everything else stays closed.
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

  it('by default charged and free endpoints answer 503 unavailable with Retry-After, send nothing unpaid, and recover', async () => {
    const { id, key } = await h.account('starter');
    expect((await h.request(`/transcript/${VIDEO}`, { key })).status).toBe(200);
    await redis.kill('SIGKILL');

    for (const r of [
      await h.request(`/transcript/${VIDEO}`, { key }),
      await h.request(`/api/v1/comments/${VIDEO}`, { key }),
      await h.request('/jobs', { key, body: { video_ids: videoIds('vid', 2) } }),
      await h.request('/api/v1/usage', { key }),
      await h.request('/api/v1/search?q=cats', { key }),
      await h.request(`/api/v1/videos/${VIDEO}`, { key }),
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

describe.each(ADAPTERS)('$name server: free endpoints fail open (failOpenFreeEndpoints)', (adapter) => {
  let redis: RedisServer;
  let h: Harness;
  beforeAll(async () => {
    redis = await startRedisServer({ appendOnly: true });
    h = await startHarness(adapter, 'fail-open', { redisUrl: redis.url, failOpenFreeEndpoints: true });
  });
  afterAll(async () => {
    await h?.close();
    await redis?.stop();
  });

  it('the catalog reads answer 200 to a caller verified recently, uncounted and without rate-limit headers; charged and other endpoints stay 503', async () => {
    const { id, key } = await h.account('starter');
    const stranger = await h.account('starter');
    const token = (await h.admin(`/admin/accounts/${id}/oauth-tokens`)).body.access_token as string;
    const login = await h.request('/web/login', { body: { api_key: key } });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    expect((await h.request('/api/v1/search?q=cats', { key })).status).toBe(200);
    expect((await h.request('/api/v1/search?q=cats', { headers: { cookie } })).status).toBe(200);
    const before = await h.service.tollgate.usage(id);
    await redis.kill('SIGKILL');

    const CHANNEL = `UC${'a'.repeat(22)}`;
    const PLAYLIST = `PL${'b'.repeat(20)}`;
    const free = [
      ['/api/v1/search?q=cats', { key }],
      [`/api/v1/videos/${VIDEO}`, { headers: { 'x-api-key': key } }],
      [`/api/v1/channels/${CHANNEL}/videos`, { key }],
      [`/api/v1/playlists/${PLAYLIST}/videos`, { key }],
      ['/api/v1/search?q=dogs', { headers: { cookie } }],
      // The demo OAuth verifier needs no Redis.
      ['/api/v1/search?q=birds', { key: token }],
    ] as const;
    for (const [path, options] of free) {
      const r = await h.request(path, options);
      expect(r.status, path).toBe(200);
      expect(r.headers.get('x-ratelimit-limit'), path).toBeNull();
      expect(r.headers.get('x-request-id'), path).toMatch(/^req_/);
    }
    // A bad input is still the 400 it always is.
    expect((await h.request('/api/v1/videos/short', { key })).status).toBe(400);

    const wrongSecret = key.slice(0, -4) + (key.endsWith('aaaa') ? 'bbbb' : 'aaaa');
    const closed = [
      [`/transcript/${VIDEO}`, { key }],
      [`/api/v1/comments/${VIDEO}`, { key }],
      ['/jobs', { key, body: { video_ids: videoIds('vid', 2) } }],
      ['/jobs', { key }],
      ['/api/v1/usage', { key }],
      [`/transcript/${VIDEO}`, { key: token }],
      // Not verified while Redis was there: nothing vouches for these.
      ['/api/v1/search?q=cats', { key: stranger.key }],
      ['/api/v1/search?q=cats', { key: wrongSecret }],
    ] as const;
    for (const [path, options] of closed) {
      const r = await h.request(path, options);
      expect(r.status, path).toBe(503);
      expect(r.body.error.type, path).toBe('unavailable');
      expect(Number(r.headers.get('retry-after')), path).toBeGreaterThanOrEqual(1);
    }

    await redis.restart();
    await vi.waitFor(async () => expect((await h.request('/api/v1/usage', { key })).status).toBe(200), { timeout: 20_000, interval: 100 });
    const after = await h.service.tollgate.usage(id);
    expect(after.credits).toEqual(before.credits);
    expect(after.rateLimit.remaining).toBe(before.rateLimit.remaining);
    // And the wrong key is refused as ever once Redis can say so.
    expect((await h.request('/api/v1/search?q=cats', { key: wrongSecret })).status).toBe(401);
  });
});
