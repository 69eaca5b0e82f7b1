// onStoreError (docs/reliability.md "When Redis is down"): what each framework's middleware
// answers while the quota store is unreachable. "closed" (the default) answers 503; "open"
// lets the request through uncounted; "local" counts it in this process against the windows
// last seen for the subject, each limit divided by `instances`. Neither verifies a key: the
// pass names the key's subject, unverified, with `degraded`. A request that pre-checks credits
// always fails closed, and telemetry counts each decision. Real apps on a Redis of this file's
// own, killed and started again, or paused past the call's timeout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, type CounterLike, type TelemetryAttributes, type Tollgate } from '../src/index.ts';
import { TELEMETRY_NAMES } from '../src/telemetry.ts';
import { connectClient, serverPid, waitUntil } from './faults/support.ts';
import { expressApp, FRAMEWORKS, get, type App, type Headers, type Options } from './helpers/frameworks.ts';
import { startRedisServer, type RedisServer } from './helpers/redisServer.ts';
import { accountId, type TestClient } from './helpers/tollgate.ts';

const DAY_MS = 86_400_000;
// Windows of a day: a test never meets a window's reset in its few seconds.
const PLANS = {
  small: {
    limits: { api: [{ limit: 10, windowMs: DAY_MS }] },
    credits: { allowance: 100, cycle: { months: 1 } },
    holds: { cap: 1, maxItems: 10, surfaces: ['api'] },
  },
  large: {
    limits: { api: [{ limit: 30, windowMs: DAY_MS }] },
    credits: { allowance: 100, cycle: { months: 1 } },
    holds: { cap: 1, maxItems: 10, surfaces: ['api'] },
  },
};
const apiKey = (h: Headers) => (typeof h['x-api-key'] === 'string' ? h['x-api-key'] : null);

describe.each(FRAMEWORKS)('tollgate/%s with the quota store down', (_name, makeApp) => {
  let server: RedisServer;
  let client: TestClient;
  let tg: Tollgate;
  const counted: Array<{ value: number; attributes: TelemetryAttributes | undefined }> = [];
  const apps: Record<'closed' | 'open' | 'local' | 'localCredits' | 'openSubject' | 'localPolicy', App> = {} as never;
  let known: { subject: string; key: string };
  let unseen: { subject: string; key: string };

  beforeAll(async () => {
    server = await startRedisServer({ appendOnly: true });
    client = await connectClient('ioredis', server.url, { offlineQueue: false });
    const degraded: CounterLike = { add: (value, attributes) => void counted.push({ value, attributes }) };
    const meter = { createCounter: (name: string): CounterLike => (name === TELEMETRY_NAMES.degraded ? degraded : { add() {} }) };
    const policies = { signin: { api: [{ limit: 4, windowMs: DAY_MS }] } };
    tg = createTollgate({ redis: client.adapter, plans: PLANS, policies, timeoutMs: 300, telemetry: { meter } });
    const account = async () => {
      const subject = accountId('down');
      await tg.accounts.create(subject, { plan: 'large' });
      return { subject, key: (await tg.keys.issue(subject)).key };
    };
    [known, unseen] = [await account(), await account()];
    const byKey: Options = { key: apiKey };
    apps.closed = await makeApp(tg, byKey);
    apps.open = await makeApp(tg, { ...byKey, onStoreError: 'open' });
    apps.local = await makeApp(tg, { ...byKey, onStoreError: 'local', instances: 2 });
    apps.localCredits = await makeApp(tg, { ...byKey, onStoreError: 'local', credits: 1 });
    apps.openSubject = await makeApp(tg, { subject: (h) => (typeof h['x-account'] === 'string' ? h['x-account'] : null), onStoreError: 'open' });
    apps.localPolicy = await makeApp(tg, { subject: () => 'ip:203.0.113.7', policy: 'signin', onStoreError: 'local', instances: 2 });
    // While the store answers, the local limiter learns the known subject's windows (30 a day).
    const up = await get(apps.local, { 'x-api-key': known.key });
    expect(up.headers.get('x-ratelimit-limit')).toBe('30');
    expect(up.body.pass.degraded).toBeUndefined();
    await server.kill();
  });
  afterAll(async () => {
    await Promise.all(Object.values(apps).map((app) => app.close()));
    await client?.close();
    await server?.stop();
  });

  it('"closed" (the default) answers 503 unavailable with Retry-After', async () => {
    const reply = await get(apps.closed, { 'x-api-key': known.key });
    expect(reply.status).toBe(503);
    expect(reply.body.error.type).toBe('unavailable');
    expect(reply.headers.get('retry-after')).toBe('1');
  });

  it('"open" lets the request through uncounted, with the subject the key names, unverified, and degraded "open"', async () => {
    const reply = await get(apps.open, { 'x-api-key': known.key });
    expect(reply.status).toBe(200);
    expect(reply.body.pass).toEqual({ subject: known.subject, keyId: tg.keys.parse(known.key)!.keyId, surface: 'api', headers: {}, degraded: 'open' });
    expect(reply.headers.get('x-ratelimit-limit')).toBeNull();
    // A key of the right shape that was never issued passes too: nothing can verify it.
    const forged = known.key.replace(/_[0-9a-f]{32}$/, `_${'f'.repeat(32)}`);
    expect((await get(apps.open, { 'x-api-key': forged })).body.pass).toMatchObject({ subject: known.subject, degraded: 'open' });
    // No key is still 401: there is no subject to name.
    expect((await get(apps.open)).status).toBe(401);
    const bySubject = await get(apps.openSubject, { 'x-account': 'acct_named' });
    expect(bySubject.body.pass).toEqual({ subject: 'acct_named', surface: 'api', headers: {}, degraded: 'open' });
  });

  it('"local" counts in this process against the windows last seen for the subject, each limit divided by instances, then 429', async () => {
    // 30 a day, 1 counted while the store answered: 30 / 2 instances = 15 here, counted afresh.
    for (let i = 1; i <= 15; i++) {
      const reply = await get(apps.local, { 'x-api-key': known.key });
      expect(reply.status, `request ${i}`).toBe(200);
      expect(reply.headers.get('x-ratelimit-limit')).toBe('15');
      expect(reply.headers.get('x-ratelimit-remaining')).toBe(String(15 - i));
      expect(reply.body.pass).toMatchObject({ subject: known.subject, degraded: 'local', admission: { ok: true, allowed: true } });
    }
    const denied = await get(apps.local, { 'x-api-key': known.key });
    expect(denied.status).toBe(429);
    expect(denied.body.error.type).toBe('rate_limited');
    expect(Number(denied.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('"local" gives a subject it has not seen the most restrictive windows any plan gives the surface', async () => {
    // The small plan's 10 a day, halved.
    for (let i = 1; i <= 5; i++) expect((await get(apps.local, { 'x-api-key': unseen.key })).headers.get('x-ratelimit-limit')).toBe('5');
    expect((await get(apps.local, { 'x-api-key': unseen.key })).status).toBe(429);
  });

  it('"local" counts a policy subject by the policy\'s windows, divided by instances', async () => {
    for (let i = 1; i <= 2; i++) expect((await get(apps.localPolicy)).body.pass).toMatchObject({ subject: 'ip:203.0.113.7', degraded: 'local' });
    expect((await get(apps.localPolicy)).status).toBe(429);
  });

  it('a request that pre-checks credits fails closed whatever onStoreError says', async () => {
    const reply = await get(apps.localCredits, { 'x-api-key': known.key });
    expect(reply.status).toBe(503);
    expect(reply.body.error.type).toBe('unavailable');
  });

  it('telemetry counts each decision made without the store, by mode, surface and outcome', () => {
    const by = (mode: string, outcome: string) =>
      counted.filter((c) => c.attributes?.['tollgate.mode'] === mode && c.attributes?.['tollgate.outcome'] === outcome).length;
    expect(by('open', 'passed')).toBe(3);
    expect(by('local', 'passed')).toBe(22);
    expect(by('local', 'denied')).toBe(3);
    expect(counted.every((c) => c.value === 1 && c.attributes?.['tollgate.surface'] === 'api')).toBe(true);
  });

  it('goes back to the store as soon as it answers again', async () => {
    await server.restart();
    await waitUntil('the store answers', async () => (await get(apps.local, { 'x-api-key': known.key })).status === 200);
    const reply = await get(apps.local, { 'x-api-key': known.key });
    expect(reply.body.pass.degraded).toBeUndefined();
    expect(reply.headers.get('x-ratelimit-limit')).toBe('30');
  });
});

describe('onStoreError with the quota store paused (slower than timeoutMs)', () => {
  let server: RedisServer;
  let client: TestClient;
  let app: App;
  let pid: number;
  let paused: { status: number; degraded: string | undefined; limit: string | null; ms: number };

  beforeAll(async () => {
    server = await startRedisServer();
    client = await connectClient('ioredis', server.url, { offlineQueue: false });
    const tg = createTollgate({ redis: client.adapter, plans: PLANS, timeoutMs: 200 });
    const subject = accountId('paused');
    await tg.accounts.create(subject, { plan: 'large' });
    const { key } = await tg.keys.issue(subject);
    app = await expressApp(tg, { key: apiKey, onStoreError: 'local' });
    expect((await get(app, { 'x-api-key': key })).headers.get('x-ratelimit-limit')).toBe('30');
    pid = await serverPid(server.port);
    process.kill(pid, 'SIGSTOP');
    try {
      const started = performance.now();
      const reply = await get(app, { 'x-api-key': key });
      paused = { status: reply.status, degraded: reply.body.pass?.degraded, limit: reply.headers.get('x-ratelimit-limit'), ms: performance.now() - started };
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  });
  afterAll(async () => {
    await app?.close();
    await client?.close();
    await server?.stop();
  });

  it('decides locally once the call times out, on the windows the store answered before', () => {
    expect(paused).toMatchObject({ status: 200, degraded: 'local', limit: '30' });
    // The call waited for the timeout (200 ms), not for the store to come back.
    expect(paused.ms).toBeGreaterThanOrEqual(190);
    expect(paused.ms).toBeLessThan(2_000);
  });
});
