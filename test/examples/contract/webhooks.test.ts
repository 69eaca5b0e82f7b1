// Webhooks (docs/example-service.md#webhooks) against both example servers: a real receiving HTTP
// server verifies every delivery with standardwebhooks' Webhook.verify, as a receiver would; it
// gets each of tollgate's events at least once, sees a failed delivery tried again with the same
// webhook-id, refuses the signature under another secret, and the consumer stops with the server.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { TollgateEvent } from 'tollgate';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WEBHOOK_GROUP, type WebhookOptions, type WebhookPayload } from '../../../examples/shared/events/webhooks.ts';
import { main } from '../../../examples/shared/main.ts';
import { uniquePrefix } from '../../helpers/redis.ts';
import { ADAPTERS, type Harness, startHarness } from './harness.ts';

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;

interface Delivery {
  headers: Record<string, string>;
  body: string;
  /** The payload Webhook.verify returned, or undefined when it threw. */
  payload?: WebhookPayload;
  refused?: unknown;
  /** True when the sender hung up before the answer. */
  aborted: boolean;
}

/** What the receiver answers a verified delivery (its n-th of that webhook-id, from 1): a status, or never. */
type Answer = (delivery: Delivery, nth: number) => number | 'hang';

interface Receiver {
  url: string;
  deliveries: Delivery[];
  /** The verified payloads by webhook-id, the first of each. */
  received(): Map<string, WebhookPayload>;
  close(): Promise<void>;
}

/** A receiving server as a user writes one: it verifies each request with the secret it was given, and answers 204, or 400 when the signature fails. */
async function startReceiver(verifyWith: string, answer: Answer = () => 204): Promise<Receiver> {
  const webhook = new Webhook(verifyWith);
  const deliveries: Delivery[] = [];
  const seen = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[name] = value;
      const delivery: Delivery = { headers, body: Buffer.concat(chunks).toString('utf8'), aborted: false };
      deliveries.push(delivery);
      res.on('close', () => {
        if (!res.writableFinished) delivery.aborted = true;
      });
      try {
        delivery.payload = webhook.verify(delivery.body, headers) as WebhookPayload;
      } catch (error) {
        delivery.refused = error;
        res.writeHead(400).end();
        return;
      }
      const id = headers['webhook-id']!;
      const nth = (seen.get(id) ?? 0) + 1;
      seen.set(id, nth);
      const status = answer(delivery, nth);
      if (status !== 'hang') res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    deliveries,
    received() {
      const byId = new Map<string, WebhookPayload>();
      for (const delivery of deliveries)
        if (delivery.payload) byId.set(delivery.headers['webhook-id']!, byId.get(delivery.headers['webhook-id']!) ?? delivery.payload);
      return byId;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe.each(ADAPTERS)('$name server: webhooks', (adapter) => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const item of open.splice(0).reverse()) await item.close();
    failed.length = 0;
  });
  /** A server delivering to the receiver: one pause of 50 ms between tries, failures kept in `failed` instead of logged. */
  const failed: unknown[] = [];
  async function serve(webhooks: WebhookOptions, prefix?: string): Promise<Harness> {
    const options = { retryDelaysMs: [50], onFailure: (_event: unknown, error: unknown) => failed.push(error), ...webhooks };
    const h = await startHarness(adapter, 'webhooks', { webhooks: options, ...(prefix === undefined ? {} : { prefix }) });
    open.push(h);
    return h;
  }
  async function receive(verifyWith: string, answer?: Answer): Promise<Receiver> {
    const receiver = await startReceiver(verifyWith, answer);
    open.push(receiver);
    return receiver;
  }
  /** Every event of the subject as a second consumer group of the test's own sees them. */
  function audit(h: Harness): { events: TollgateEvent[]; stop(): Promise<void> } {
    const events: TollgateEvent[] = [];
    const stopping = new AbortController();
    const running = h.service.tollgate.events.consume({
      group: 'test-audit',
      signal: stopping.signal,
      handler: async (event) => {
        events.push(event);
      },
    });
    const stop = async () => {
      stopping.abort();
      await running;
    };
    open.push({ close: stop });
    return { events, stop };
  }

  it('delivers every event to WEBHOOK_URL signed per Standard Webhooks: webhook-id is the event id, Webhook.verify accepts each', async () => {
    const key = secret();
    const receiver = await receive(key);
    const h = await serve({ url: receiver.url, secret: key });
    const seen = audit(h);
    const account = await h.account('starter');
    // 1,000 credits: spending 910 crosses both thresholds of the plan (80% used, 100 left or less).
    await h.leave(account.id, 90);
    await vi.waitFor(() => expect(seen.events.filter((e) => e.subject === account.id && e.type === 'credits.threshold')).toHaveLength(2), { timeout: 10_000 });
    const ids = seen.events.filter((e) => e.subject === account.id).map((e) => e.id);
    await vi.waitFor(() => expect([...receiver.received().keys()].filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort()), { timeout: 10_000 });

    for (const event of seen.events.filter((e) => e.subject === account.id)) {
      const payload = receiver.received().get(event.id)!;
      expect(payload).toEqual({ type: event.type, timestamp: new Date(event.at).toISOString(), data: { subject: account.id, ...event.data } });
    }
    const thresholds = seen.events.filter((e) => e.subject === account.id && e.type === 'credits.threshold').map((e) => receiver.received().get(e.id)!.data);
    expect(thresholds.map((data) => data.threshold)).toEqual(expect.arrayContaining([{ usedPercent: 80 }, { below: 100 }]));
    // Every request carried the three headers and JSON; none was refused, none failed.
    expect(failed).toEqual([]);
    for (const delivery of receiver.deliveries) {
      expect(delivery.refused).toBeUndefined();
      expect(delivery.headers['content-type']).toBe('application/json');
      expect(delivery.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(Math.abs(Number(delivery.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    }
  });

  it('a delivery answered 500 is tried again, with the same webhook-id and a signature that verifies', async () => {
    const key = secret();
    const receiver = await receive(key, (_delivery, nth) => (nth === 1 ? 500 : 204));
    const h = await serve({ url: receiver.url, secret: key });
    const account = await h.account('starter');
    await h.leave(account.id, 90);
    await vi.waitFor(
      () => {
        const mine = receiver.deliveries.filter((d) => d.payload?.data.subject === account.id);
        const ids = new Set(mine.map((d) => d.headers['webhook-id']));
        expect(ids.size).toBeGreaterThanOrEqual(2);
        // Each event twice: answered 500, then 204.
        for (const id of ids) expect(mine.filter((d) => d.headers['webhook-id'] === id).length).toBeGreaterThanOrEqual(2);
      },
      { timeout: 10_000 },
    );
    for (const delivery of receiver.deliveries) expect(delivery.refused).toBeUndefined();
  });

  it('a delivery whose tries all fail goes back to tollgate, which delivers it again with the next attempt', async () => {
    const key = secret();
    // The first try of each event fails and there is no second try in the process: the retry is tollgate's.
    const receiver = await receive(key, (_delivery, nth) => (nth === 1 ? 503 : 204));
    const failures: Array<{ id: string; attempt: number }> = [];
    const h = await serve({
      url: receiver.url,
      secret: key,
      retryDelaysMs: [],
      retryMs: 200,
      onFailure: (event) => failures.push({ id: event.id, attempt: event.attempt }),
    });
    const account = await h.account('starter');
    await h.leave(account.id, 90);
    await vi.waitFor(
      () => {
        const mine = receiver.deliveries.filter((d) => d.payload?.data.subject === account.id);
        expect(mine.filter((d) => d.headers['webhook-id'] === failures[0]?.id).length).toBe(2);
      },
      { timeout: 15_000 },
    );
    expect(failures[0]!.attempt).toBe(1);
  });

  it('a receiver that verifies with another secret refuses every delivery: Webhook.verify finds no matching signature', async () => {
    const key = secret();
    const receiver = await receive(secret());
    const h = await serve({ url: receiver.url, secret: key });
    const account = await h.account('starter');
    await h.leave(account.id, 90);
    // Refused (400) on both tries of a delivery, so the event is left to tollgate; none accepted.
    await vi.waitFor(() => expect(failed.length).toBeGreaterThanOrEqual(1), { timeout: 10_000 });
    expect(receiver.deliveries.length).toBeGreaterThanOrEqual(2);
    expect(String(failed[0])).toMatch(/the receiver answered 400$/);
    for (const delivery of receiver.deliveries) {
      expect(delivery.payload).toBeUndefined();
      expect(delivery.refused).toBeInstanceOf(WebhookVerificationError);
      expect((delivery.refused as Error).message).toBe('No matching signature found');
      // The right secret verifies the same bytes; a changed byte does not.
      expect(() => new Webhook(key).verify(delivery.body, delivery.headers)).not.toThrow();
      expect(() => new Webhook(key).verify(delivery.body.replace(account.id, `${account.id}x`), delivery.headers)).toThrow(WebhookVerificationError);
    }
  });

  it('stopping the server stops its consumer: a try in flight is cut short and close() returns', async () => {
    const key = secret();
    const receiver = await receive(key, () => 'hang');
    const h = await serve({ url: receiver.url, secret: key, timeoutMs: 60_000 });
    const account = await h.account('starter');
    await h.leave(account.id, 90);
    await vi.waitFor(() => expect(receiver.deliveries.length).toBeGreaterThanOrEqual(1), { timeout: 10_000 });
    const started = Date.now();
    open.splice(open.indexOf(h), 1);
    await h.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    await vi.waitFor(() => expect(receiver.deliveries.every((d) => d.aborted)).toBe(true), { timeout: 5_000 });
  });

  it(`one consumer group, "${WEBHOOK_GROUP}", for every server: two servers on one Redis send each event once between them`, async () => {
    const key = secret();
    const receiver = await receive(key);
    const prefix = uniquePrefix(`webhooks-shared-${adapter.name}`);
    const first = await serve({ url: receiver.url, secret: key }, prefix);
    const second = await serve({ url: receiver.url, secret: key }, prefix);
    const accounts = await Promise.all([first.account('starter'), second.account('starter'), first.account('starter')]);
    for (const account of accounts) await first.leave(account.id, 90);
    const subjects = new Set(accounts.map((a) => a.id));
    const mine = () => receiver.deliveries.filter((d) => subjects.has(d.payload!.data.subject));
    // Two thresholds crossed per account.
    await vi.waitFor(() => expect(new Set(mine().map((d) => d.headers['webhook-id'])).size).toBe(6), { timeout: 10_000 });
    expect(mine()).toHaveLength(6);
  });
});

describe('WEBHOOK_URL and WEBHOOK_SECRET at start-up', () => {
  const listen = () => Promise.reject(new Error('must not listen'));
  const env = (extra: NodeJS.ProcessEnv) => ({ REDIS_URL: 'redis://127.0.0.1:1', ...extra });

  it('WEBHOOK_URL needs WEBHOOK_SECRET; start-up refuses before Redis is touched', async () => {
    await expect(main('express', listen, env({ WEBHOOK_URL: 'http://127.0.0.1:9/hooks' }))).rejects.toThrow(/WEBHOOK_URL needs WEBHOOK_SECRET/);
  });

  it('the secret must be whsec_ and 24-64 bytes in base64, the URL http(s)', async () => {
    for (const bad of ['s3cret', 'whsec_', `whsec_${randomBytes(8).toString('base64')}`, `whsec_${randomBytes(80).toString('base64')}`]) {
      await expect(main('express', listen, env({ WEBHOOK_URL: 'http://127.0.0.1:9/hooks', WEBHOOK_SECRET: bad }))).rejects.toThrow(
        /WEBHOOK_SECRET must be whsec_/,
      );
    }
    await expect(main('express', listen, env({ WEBHOOK_URL: 'ftp://example.com/x', WEBHOOK_SECRET: secret() }))).rejects.toThrow(
      /WEBHOOK_URL must be an http\(s\) URL/,
    );
  });
});
