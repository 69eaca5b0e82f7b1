// Framework-neutral HTTP mapping (docs/limits.md, docs/errors.md): the rate-limit headers from the most
// restrictive window, the IETF fields with one policy item per window, 429/402/503 replies and
// the error body.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimitState } from '../src/index.ts';
import {
  AccountExistsError,
  AccountNotFoundError,
  EvictionPolicyError,
  GrantNotFoundError,
  HoldNotFoundError,
  InvalidInputError,
  KeyLimitError,
  StoreUnavailableError,
} from '../src/errors.ts';
import { ERROR_STATUS, errorReply, insufficientReply, newRequestId, rateLimitHeaders, rateLimitedReply, replyForError, unavailableReply } from '../src/http.ts';
import { SERVICE_STATUS } from '../examples/shared/http/handler.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { TEST_START, accountId, openTollgate, type TestGate } from './helpers/tollgate.ts';

const w = (limit: number, seconds: number, remaining: number, resetMs: number): RateLimitState => ({
  limit,
  remaining,
  resetMs,
  windowMs: seconds * 1000,
  algorithm: 'fixed',
});

describe('rate-limit headers', () => {
  it('X-RateLimit-Limit, -Remaining and -Reset in whole seconds (rounded up), remaining never negative', () => {
    const one = w(30, 60, -1, 1_200);
    expect(rateLimitHeaders({ rateLimit: one, windows: [one] })).toEqual({
      'X-RateLimit-Limit': '30',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': '2',
    });
    expect(rateLimitHeaders({ rateLimit: w(30, 60, 3, 45_000) })['X-RateLimit-Reset']).toBe('45');
    expect(rateLimitHeaders({ rateLimit: w(30, 60, 3, 0) })['X-RateLimit-Reset']).toBe('0');
  });

  it('the headers come from the most restrictive window (rateLimit), wherever it stands among the windows', () => {
    const burst = w(10, 1, 7, 400);
    const minute = w(300, 60, 2, 30_000);
    expect(rateLimitHeaders({ rateLimit: minute, windows: [burst, minute] })).toEqual({
      'X-RateLimit-Limit': '300',
      'X-RateLimit-Remaining': '2',
      'X-RateLimit-Reset': '30',
    });
  });

  it('the IETF draft fields are opt-in, beside the legacy ones', () => {
    const one = w(100, 60, 42, 30_000);
    expect(rateLimitHeaders({ rateLimit: one, windows: [one] })).not.toHaveProperty('RateLimit');
    expect(rateLimitHeaders({ rateLimit: one, windows: [one] })).not.toHaveProperty('RateLimit-Policy');
    const h = rateLimitHeaders({ rateLimit: one, windows: [one] }, { ietf: true });
    expect(h['X-RateLimit-Limit']).toBe('100');
    expect(h['X-RateLimit-Remaining']).toBe('42');
  });

  it('one window keeps the form: RateLimit-Policy "api";q=30;w=60 and RateLimit "api";r=..;t=..', () => {
    const one = w(30, 60, 12, 30_000);
    const h = rateLimitHeaders({ rateLimit: one, windows: [one] }, { ietf: true });
    expect(h['RateLimit-Policy']).toBe('"api";q=30;w=60');
    expect(h.RateLimit).toBe('"api";r=12;t=30');
    // Without the windows list, rateLimit is the one window.
    expect(rateLimitHeaders({ rateLimit: one }, { ietf: true })['RateLimit-Policy']).toBe('"api";q=30;w=60');
    // The policy is named after the surface given.
    expect(rateLimitHeaders({ rateLimit: one }, { ietf: true, policy: 'web' }).RateLimit).toBe('"web";r=12;t=30');
  });

  it("w= is the window's own seconds, not a hard-coded 60", () => {
    const hour = w(1000, 3600, 999, 1_800_000);
    expect(rateLimitHeaders({ rateLimit: hour, windows: [hour] }, { ietf: true })['RateLimit-Policy']).toBe('"api";q=1000;w=3600');
  });

  it('RateLimit-Policy lists every window with its own w=; RateLimit names the most restrictive one', () => {
    const burst = w(10, 1, 7, 400);
    const minute = w(300, 60, 2, 30_000);
    const day = w(5000, 86_400, 4000, 3_600_000);
    const h = rateLimitHeaders({ rateLimit: minute, windows: [burst, minute, day] }, { ietf: true, policy: 'api' });
    expect(h['RateLimit-Policy']).toBe('"api-1s";q=10;w=1, "api-60s";q=300;w=60, "api-86400s";q=5000;w=86400');
    expect(h.RateLimit).toBe('"api-60s";r=2;t=30');
  });
});

describe.each(['node-redis', 'memory'] as const)('headers of real admissions on %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    const burst = {
      ...EXAMPLE_PLANS.free,
      limits: {
        ...EXAMPLE_PLANS.free.limits,
        api: [
          { limit: 3, windowMs: 10_000 },
          { limit: 5, windowMs: 60_000 },
        ],
      },
    };
    gate = await openTollgate(kind, 'http', { plans: { ...EXAMPLE_PLANS, burst } });
  });
  afterAll(() => gate.close());

  it('a two-window surface: the headers follow whichever window is most restrictive as it changes', async () => {
    gate.clock.set(TEST_START + 15_000);
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'burst' });
    const first = await gate.tg.limits.admit(id);
    expect(rateLimitHeaders(first, { ietf: true })).toEqual({
      'X-RateLimit-Limit': '3',
      'X-RateLimit-Remaining': '2',
      'X-RateLimit-Reset': '5',
      'RateLimit-Policy': '"api-10s";q=3;w=10, "api-60s";q=5;w=60',
      RateLimit: '"api-10s";r=2;t=5',
    });
    await gate.tg.limits.admit(id);
    gate.clock.advance(5_000);
    // 5 in the minute now: the minute is the most restrictive window.
    for (let i = 0; i < 3; i++) await gate.tg.limits.admit(id);
    const denied = await gate.tg.limits.admit(id);
    if (denied.allowed) throw new Error('expected a denial');
    const reply = rateLimitedReply(denied, 'req_1', { ietf: true });
    expect(reply.headers).toMatchObject({
      'X-RateLimit-Limit': '5',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': '40',
      'Retry-After': '40',
      RateLimit: '"api-60s";r=0;t=40',
    });
  });

  it('usage gives the same headers as the admission it follows (a free usage poll)', async () => {
    gate.clock.set(TEST_START + 15_000);
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'free' });
    const admitted = await gate.tg.limits.admit(id);
    expect(rateLimitHeaders(await gate.tg.usage(id), { ietf: true })).toEqual(rateLimitHeaders(admitted, { ietf: true }));
  });
});

describe('error replies', () => {
  it('429 rate_limited: message exactly "Rate limit exceeded", Retry-After whole seconds and at least 1', () => {
    const state = w(30, 60, 0, 10);
    const r = rateLimitedReply({ rateLimit: state, windows: [state], retryAfterMs: 10 }, 'req_1');
    expect(r.status).toBe(429);
    expect(r.headers).toEqual({
      'Content-Type': 'application/json',
      'X-Request-Id': 'req_1',
      'X-RateLimit-Limit': '30',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': '1',
      'Retry-After': '1',
    });
    expect(r.body).toEqual({ error: { type: 'rate_limited', message: 'Rate limit exceeded' }, request_id: 'req_1' });
    expect(rateLimitedReply({ rateLimit: w(30, 60, 0, 42_001), retryAfterMs: 42_001 }, 'req_2').headers['Retry-After']).toBe('43');
  });

  it("Retry-After is when the request would fit (retryAfterMs), which may come before the window's reset", () => {
    const sliding: RateLimitState = { limit: 10, remaining: 0, resetMs: 59_000, windowMs: 60_000, algorithm: 'sliding' };
    const r = rateLimitedReply({ rateLimit: sliding, retryAfterMs: 1 }, 'req_3');
    expect(r.headers['Retry-After']).toBe('1');
    expect(r.headers['X-RateLimit-Reset']).toBe('59');
  });

  it('rateLimitedReply has no Retry-After when retryAfterMs is null (a cost no window can take), but keeps the rate-limit headers', () => {
    const state = w(30, 60, 25, 45_000);
    const r = rateLimitedReply({ rateLimit: state, windows: [state], retryAfterMs: null }, 'req_4', { ietf: true });
    expect(r.status).toBe(429);
    expect(r.headers).not.toHaveProperty('Retry-After');
    expect(r.headers).toMatchObject({ 'X-RateLimit-Remaining': '25', 'X-RateLimit-Reset': '45', 'RateLimit-Policy': '"api";q=30;w=60' });
  });

  it('402 insufficient_quota states the remaining and needed counts in the message and as numbers', () => {
    const r = insufficientReply(1, 2, 'req_5', { 'X-RateLimit-Remaining': '28' });
    expect(r.status).toBe(402);
    expect(r.headers['X-RateLimit-Remaining']).toBe('28');
    expect(r.body).toEqual({
      error: { type: 'insufficient_quota', message: 'Insufficient credits: 1 remaining, 2 needed', remaining: 1, needed: 2 },
      request_id: 'req_5',
    });
  });

  it('503 unavailable carries Retry-After; thrown tollgate errors map to their replies, others are not ours', () => {
    expect(unavailableReply('req_6').headers['Retry-After']).toBe('1');
    expect(replyForError(new StoreUnavailableError('down'), 'req_7')).toMatchObject({
      status: 503,
      headers: { 'Retry-After': '1' },
      body: { error: { type: 'unavailable' } },
    });
    // A store that may evict tollgate's keys: 503 too, without the server's configuration in the body.
    const evicting = replyForError(new EvictionPolicyError('volatile-lru', '10.0.0.1:6379'), 'req_7b');
    expect(evicting).toMatchObject({ status: 503, body: { error: { type: 'unavailable' } } });
    expect(JSON.stringify(evicting)).not.toMatch(/volatile-lru|10\.0\.0\.1/);
    expect(replyForError(new AccountNotFoundError('a'), 'req_8')).toMatchObject({ status: 404, body: { error: { type: 'not_found' } } });
    expect(replyForError(new HoldNotFoundError('h'), 'req_9')).toMatchObject({ status: 404, body: { error: { type: 'not_found' } } });
    expect(replyForError(new GrantNotFoundError('g7'), 'req_9b')).toMatchObject({ status: 404, body: { error: { type: 'not_found' } } });
    expect(replyForError(new AccountExistsError('a'), 'req_10')).toMatchObject({ status: 409, body: { error: { type: 'account_exists' } } });
    expect(replyForError(new InvalidInputError('bad cost'), 'req_11')).toMatchObject({
      status: 400,
      body: { error: { type: 'invalid_request', message: 'bad cost' } },
    });
    expect(replyForError(new KeyLimitError('a', 20), 'req_12')?.status).toBe(400);
    expect(replyForError(new Error('not ours'), 'req_13')).toBeUndefined();
  });

  it("every error type has its status: tollgate's own in ERROR_STATUS, the example service's beside it", () => {
    expect(ERROR_STATUS).toEqual({
      invalid_request: 400,
      unauthorized: 401,
      insufficient_quota: 402,
      not_found: 404,
      account_exists: 409,
      idempotency_key_in_use: 409,
      idempotency_key_reused: 422,
      rate_limited: 429,
      hold_limit_reached: 429,
      unavailable: 503,
      internal_error: 500,
    });
    expect(SERVICE_STATUS).toMatchObject({
      plan_not_allowed: 403,
      forbidden: 403,
      method_not_allowed: 405,
      payload_too_large: 413,
      unsupported_media_type: 415,
      upstream_error: 502,
    });
    expect(errorReply('plan_not_allowed', 'no', { requestId: 'req_14', status: SERVICE_STATUS.plan_not_allowed }).status).toBe(403);
    // A host's own error type gives its status.
    expect(errorReply('item_unavailable', 'gone', { requestId: 'req_15', status: 404 })).toMatchObject({
      status: 404,
      body: { error: { type: 'item_unavailable', message: 'gone' }, request_id: 'req_15' },
    });
  });

  it('the error body is {error:{type,message,...extra}, request_id} with the same id in X-Request-Id', () => {
    const r = errorReply('idempotency_key_reused', 'other body', { requestId: 'req_16', extra: { key: 'k1' } });
    expect(r).toEqual({
      status: 422,
      headers: { 'Content-Type': 'application/json', 'X-Request-Id': 'req_16' },
      body: { error: { key: 'k1', type: 'idempotency_key_reused', message: 'other body' }, request_id: 'req_16' },
    });
  });

  it('request ids start with req_ and differ', () => {
    const a = newRequestId();
    expect(a).toMatch(/^req_[0-9a-f]{24}$/);
    expect(newRequestId()).not.toBe(a);
  });
});
