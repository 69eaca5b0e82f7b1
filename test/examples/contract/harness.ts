// One running example server for a contract test file: real HTTP on an ephemeral port, real
// Redis under a prefix of its own, an injected clock, WORKER=manual and an admin token. In the
// `cluster` project (test/vitest.config.ts) the server runs on the Redis Cluster instead.
import { listenExpress } from '../../../examples/express/app.ts';
import { listenKoa } from '../../../examples/koa/app.ts';
import type { Listening } from '../../../examples/shared/http/listen.ts';
import { createService, type Service, type ServiceOptions } from '../../../examples/shared/service.ts';
import { redisUrl, uniquePrefix } from '../../helpers/redis.ts';
import { clusterNodes } from '../../helpers/tollgate.ts';

export const ADMIN_TOKEN = 'admin-token-for-tests';

export const ADAPTERS = [
  { name: 'express', listen: listenExpress },
  { name: 'koa', listen: listenKoa },
] as const;

export type Adapter = (typeof ADAPTERS)[number];

export interface Reply {
  status: number;
  headers: Headers;
  /** Parsed JSON when the reply is JSON, else the text. */
  body: any;
  text: string;
}

export interface RequestOptions {
  method?: string;
  key?: string;
  /** A JSON value, or a raw string sent as it is. */
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
  /** Give up (the fetch rejects) when no reply came within this long. */
  timeoutMs?: number;
  /** 'manual' sees a redirect (the website's 303s) instead of following it. */
  redirect?: 'follow' | 'manual' | 'error';
}

export interface Harness {
  url: string;
  service: Service;
  clock: { now: number; advance(ms: number): void };
  request(path: string, options?: RequestOptions): Promise<Reply>;
  admin(path: string, body?: unknown): Promise<Reply>;
  account(plan: string, options?: { signup_at?: string }): Promise<{ id: string; key: string }>;
  /** Leaves the account exactly `credits` credits by spending the rest directly. */
  leave(accountId: string, credits: number): Promise<void>;
  close(): Promise<void>;
}

export async function startHarness(adapter: Adapter, name: string, overrides: Partial<ServiceOptions> = {}): Promise<Harness> {
  const clock = {
    now: Date.UTC(2026, 0, 15, 12, 0, 0),
    advance(ms: number) {
      clock.now += ms;
    },
  };
  const nodes = clusterNodes();
  const redis = overrides.redisUrl !== undefined || nodes === undefined ? { redisUrl: overrides.redisUrl ?? redisUrl() } : { redisClusterNodes: nodes };
  const service = await createService({
    ...redis,
    prefix: uniquePrefix(`${name}-${adapter.name}`),
    clock: () => clock.now,
    adminToken: ADMIN_TOKEN,
    worker: 'manual',
    sweepEveryMs: 0,
    ...overrides,
  });
  const server: Listening = await adapter.listen(service, 0);

  async function request(path: string, options: RequestOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
    let body: string | undefined = options.raw;
    if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const signal = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
    const response = await fetch(`${server.url}${path}`, {
      method: options.method ?? (body === undefined ? 'GET' : 'POST'),
      headers,
      body,
      signal,
      redirect: options.redirect,
    });
    const text = await response.text();
    const isJson = (response.headers.get('content-type') ?? '').includes('json');
    return { status: response.status, headers: response.headers, text, body: isJson && text ? JSON.parse(text) : text };
  }

  const harness: Harness = {
    url: server.url,
    service,
    clock,
    request,
    admin: (path, body = {}) => request(path, { method: 'POST', body, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }),
    async account(plan, options = {}) {
      const created = await harness.admin('/admin/accounts', { plan, ...options });
      if (created.status !== 201) throw new Error(`account: ${created.status} ${created.text}`);
      return { id: created.body.account_id, key: created.body.api_key };
    },
    async leave(accountId, credits) {
      const usage = await service.tollgate.usage(accountId);
      const spend = usage.credits.balance - credits;
      if (spend > 0) await service.tollgate.credits.charge(accountId, { required: spend });
    },
    async close() {
      await server.close();
      await service.close();
    },
  };
  return harness;
}

/** 11-character video ids with the given prefix, distinct by a counter. */
export function videoIds(prefix: string, count: number, start = 0): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${String(start + i).padStart(11 - prefix.length, '0')}`);
}
