/**
 * Framework-neutral mapping of tollgate outcomes to HTTP: status codes, the
 * rate-limit headers, Retry-After, and the error body `{error:{type,message,...}, request_id}`
 * with the same id in X-Request-Id. Adapters for any framework copy status, headers and body.
 */
import { randomBytes } from 'node:crypto';
import { isTollgateError } from './errors.ts';
import type { RateLimitState } from './rules/windows.ts';

/**
 * The status of each error type that answers a tollgate outcome or error: the refusals of
 * checkRequest and replyForError, and those a host answers holds' and idempotency's refusals
 * with. A host's own error types pass their status to errorReply.
 */
export const ERROR_STATUS = {
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
  /** An unexpected server fault, so that a host keeps one error shape for it too. */
  internal_error: 500,
} as const;

/** An error `type` of the error body, with its status in ERROR_STATUS. */
export type ErrorType = keyof typeof ERROR_STATUS;

/** A framework-neutral reply: copy the status, the headers and the JSON body to the response. */
export interface HttpReply {
  /** The HTTP status. */
  status: number;
  /** Headers to set (Content-Type, X-Request-Id, the rate-limit headers, Retry-After). */
  headers: Record<string, string>;
  /** The body, to send as JSON. */
  body: unknown;
}

/** rateLimitHeaders' options. */
export interface HeaderOptions {
  /** Also send the IETF draft fields RateLimit-Policy and RateLimit (opt-in). */
  ietf?: boolean;
  /** Policy name in the IETF fields, usually the surface; default "api". */
  policy?: string;
}

/** What the headers are taken from: an admission, a peek, or usage. */
export interface Limited {
  /** The most restrictive window: the X-RateLimit-* fields. */
  rateLimit: RateLimitState;
  /** Every window of the surface: one RateLimit-Policy item each. */
  windows?: readonly RateLimitState[];
}

/** A new request id, `req_` and 24 hex digits, for the error body and X-Request-Id. */
export function newRequestId(): string {
  return `req_${randomBytes(12).toString('hex')}`;
}

function wholeSeconds(ms: number): number {
  return Math.max(0, Math.ceil(ms / 1000));
}

/** Headers for every authenticated response, errors and 429 included. */
export function rateLimitHeaders(limited: Limited, options: HeaderOptions = {}): Record<string, string> {
  const state = limited.rateLimit;
  const reset = wholeSeconds(state.resetMs);
  const remaining = Math.max(0, state.remaining);
  const headers: Record<string, string> = {
    'X-RateLimit-Limit': String(state.limit),
    'X-RateLimit-Remaining': String(remaining),
    'X-RateLimit-Reset': String(reset),
  };
  if (options.ietf) {
    const policy = options.policy ?? 'api';
    // A shadow window is a dry run: it is never announced.
    const shown = limited.windows?.filter((w) => !w.shadow);
    const windows = shown && shown.length > 0 ? shown : [state];
    // One window keeps the surface's own name ("api"); several are told apart by length.
    const name = (w: RateLimitState) => (windows.length === 1 ? policy : `${policy}-${w.windowMs / 1000}s`);
    headers['RateLimit-Policy'] = windows.map((w) => `"${name(w)}";q=${w.limit};w=${w.windowMs / 1000}`).join(', ');
    headers.RateLimit = `"${name(state)}";r=${remaining};t=${reset}`;
  }
  return headers;
}

/** Retry-After in whole seconds, at least 1. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** The error body: `{ error: { type, message, ...extra }, request_id }`. */
export function errorBody(type: string, message: string, requestId: string, extra: Record<string, unknown> = {}) {
  return { error: { ...extra, type, message }, request_id: requestId };
}

/**
 * An error reply with the error body; rate-limit headers when the caller passes them. A
 * host's own error types give their status.
 */
export function errorReply(
  type: ErrorType | (string & {}),
  message: string,
  options: { requestId: string; status?: number; extra?: Record<string, unknown>; headers?: Record<string, string> },
): HttpReply {
  return {
    status: options.status ?? (ERROR_STATUS as Record<string, number>)[type] ?? 500,
    headers: { 'Content-Type': 'application/json', 'X-Request-Id': options.requestId, ...options.headers },
    body: errorBody(type, message, options.requestId, options.extra),
  };
}

/**
 * 429 rate_limited with Retry-After; the message is exactly "Rate limit exceeded".
 * A cost that no window can ever take has no Retry-After.
 */
export function rateLimitedReply(denial: Limited & { retryAfterMs: number | null }, requestId: string, options: HeaderOptions = {}): HttpReply {
  const retry: Record<string, string> = denial.retryAfterMs === null ? {} : { 'Retry-After': String(retryAfterSeconds(denial.retryAfterMs)) };
  return errorReply('rate_limited', 'Rate limit exceeded', { requestId, headers: { ...rateLimitHeaders(denial, options), ...retry } });
}

/**
 * 402 insufficient_quota naming the balance and the credits needed (the body's `remaining` is
 * the balance: the HTTP field keeps its name).
 */
export function insufficientReply(balance: number, needed: number, requestId: string, headers: Record<string, string> = {}): HttpReply {
  return errorReply('insufficient_quota', `Insufficient credits: ${balance} remaining, ${needed} needed`, {
    requestId,
    extra: { remaining: balance, needed },
    headers,
  });
}

/** 503 unavailable with Retry-After when the quota store cannot be reached. */
export function unavailableReply(requestId: string, retryAfter = 1, headers: Record<string, string> = {}): HttpReply {
  return errorReply('unavailable', 'The quota store is unavailable; retry later', {
    requestId,
    headers: { ...headers, 'Retry-After': String(retryAfter) },
  });
}

/**
 * Maps a thrown tollgate error to its reply; other errors are not ours to map (undefined). A
 * quota store that may evict tollgate's keys (eviction_policy) answers 503 like an unreachable
 * one: its configuration is for the operator to read in the error, not for the client.
 */
export function replyForError(error: unknown, requestId: string, headers: Record<string, string> = {}): HttpReply | undefined {
  if (!isTollgateError(error)) return undefined;
  switch (error.code) {
    case 'unavailable':
    case 'eviction_policy':
      return unavailableReply(requestId, 1, headers);
    case 'account_exists':
      return errorReply('account_exists', error.message, { requestId, headers });
    case 'account_not_found':
    case 'hold_not_found':
    case 'grant_not_found':
      return errorReply('not_found', error.message, { requestId, headers });
    default:
      return errorReply('invalid_request', error.message, { requestId, headers });
  }
}
