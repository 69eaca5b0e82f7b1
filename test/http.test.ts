// Framework-neutral HTTP mapping (SPEC §4, §8).
import { describe, expect, it } from 'vitest';
import { errorReply, insufficientReply, newRequestId, rateLimitedReply, rateLimitHeaders, replyForError, StoreUnavailableError, unavailableReply, ERROR_STATUS, AccountNotFoundError } from '../src/index.ts';

describe('rate-limit headers (SPEC §4)', () => {
  it('X-RateLimit-Limit, -Remaining and -Reset in whole seconds, remaining never negative', () => {
    expect(rateLimitHeaders({ limit: 30, remaining: -1, resetMs: 1_200 })).toEqual({
      'X-RateLimit-Limit': '30',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': '2',
    });
  });

  it('the IETF draft fields are opt-in, beside the legacy ones', () => {
    const h = rateLimitHeaders({ limit: 100, remaining: 42, resetMs: 30_000 }, { ietf: true });
    expect(h['RateLimit-Policy']).toBe('"api";q=100;w=60');
    expect(h['RateLimit']).toBe('"api";r=42;t=30');
    expect(h['X-RateLimit-Limit']).toBe('100');
    expect(rateLimitHeaders({ limit: 1, remaining: 1, resetMs: 1 })).not.toHaveProperty('RateLimit');
  });
});

describe('error replies (SPEC §8)', () => {
  it('429 rate_limited: message exactly "Rate limit exceeded", Retry-After whole seconds and at least 1', () => {
    const r = rateLimitedReply({ limit: 30, remaining: 0, resetMs: 10 }, 10, 'req_1');
    expect(r.status).toBe(429);
    expect(r.headers).toMatchObject({ 'Retry-After': '1', 'Content-Type': 'application/json', 'X-Request-Id': 'req_1', 'X-RateLimit-Remaining': '0' });
    expect(r.body).toEqual({ error: { type: 'rate_limited', message: 'Rate limit exceeded' }, request_id: 'req_1' });
    expect(rateLimitedReply({ limit: 30, remaining: 0, resetMs: 42_001 }, 42_001, 'req_2').headers['Retry-After']).toBe('43');
  });

  it('402 insufficient_quota states the remaining and needed counts in the message and as numbers', () => {
    const r = insufficientReply(1, 2, 'req_3');
    expect(r.status).toBe(402);
    expect(r.body).toEqual({ error: { type: 'insufficient_quota', message: 'Insufficient credits: 1 remaining, 2 needed', remaining: 1, needed: 2 }, request_id: 'req_3' });
  });

  it('503 unavailable carries Retry-After; thrown store errors map to it', () => {
    expect(unavailableReply('req_4').headers['Retry-After']).toBe('1');
    expect(replyForError(new StoreUnavailableError('down'), 'req_5')).toMatchObject({ status: 503, body: { error: { type: 'unavailable' } } });
    expect(replyForError(new AccountNotFoundError('a'), 'req_6')?.status).toBe(404);
    expect(replyForError(new Error('not ours'), 'req_7')).toBeUndefined();
  });

  it('every error type has the status SPEC §8 gives it', () => {
    expect(ERROR_STATUS).toEqual({
      invalid_request: 400, unauthorized: 401, insufficient_quota: 402, plan_not_allowed: 403, not_found: 404,
      video_unavailable: 404, no_captions: 404, idempotency_key_in_use: 409, idempotency_key_reused: 422,
      rate_limited: 429, job_limit_reached: 429, upstream_error: 502, unavailable: 503, internal_error: 500,
    });
    expect(errorReply('plan_not_allowed', 'no', { requestId: 'req_8' }).status).toBe(403);
  });

  it('request ids start with req_ and differ', () => {
    const a = newRequestId();
    expect(a).toMatch(/^req_[0-9a-f]{24}$/);
    expect(newRequestId()).not.toBe(a);
  });
});
