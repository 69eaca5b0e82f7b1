// DURABLE_REPLICAS: with durableReplicas 1 the example acknowledges a credit
// movement only once a replica confirms it. A replica that confirms: the transcript is served
// and charged once. A replica that stops confirming (SIGSTOP): the charge is retried once with
// its operation id, applies at most once, and the request is answered 503 unavailable with
// Retry-After, the transcript unsent; admits and free reads never wait for a replica.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pause, resume, startReplicatedPair, type ReplicatedPair } from '../../helpers/replicas.ts';
import { ADAPTERS, type Harness, startHarness } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';

describe.each(ADAPTERS)('$name server: credit movements confirmed by a replica (durableReplicas)', (adapter) => {
  let pair: ReplicatedPair;
  let h: Harness;
  beforeAll(async () => {
    pair = await startReplicatedPair();
    h = await startHarness(adapter, 'durable', { redisUrl: pair.primary.url, durableReplicas: 1 });
  });
  afterAll(async () => {
    await h?.close();
    await pair?.stop();
  });

  it('a confirmed charge serves the transcript; an unconfirmed one answers 503 with Retry-After and charges at most once', async () => {
    const { id, key } = await h.account('starter');
    const served = await h.request(`/transcript/${VIDEO}`, { key });
    expect(served.status).toBe(200);
    expect(served.text).toContain('segments');
    expect((await h.service.tollgate.usage(id)).credits).toMatchObject({ balance: 999, spent: 1 });

    pause(pair.replicaPid);
    try {
      // A free read admits without waiting for the replica.
      expect((await h.request('/api/v1/search?q=cats', { key })).status).toBe(200);
      const refused = await h.request(`/transcript/${VIDEO}`, { key });
      expect(refused.status).toBe(503);
      expect(refused.body.error.type).toBe('unavailable');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(refused.text).not.toContain('segments');
    } finally {
      resume(pair.replicaPid);
    }
    // The unconfirmed charge stands on the primary once, never twice (the retry reused its id).
    const { credits } = await h.service.tollgate.usage(id);
    expect(credits.balance + credits.spent + credits.held).toBe(1000);
    expect(credits.spent).toBe(2);
    expect((await h.request(`/transcript/${VIDEO}`, { key })).status).toBe(200);
  });
});
