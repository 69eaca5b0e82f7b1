/**
 * Framework-neutral mapping of tollgate outcomes to HTTP (SPEC §4, §8): status codes, the
 * rate-limit headers, Retry-After, and the error body `{error:{type,message,...}, request_id}`
 * with the same id in X-Request-Id. Adapters for any framework copy status, headers and body.
 */
import { randomBytes } from "node:crypto";
import { isTollgateError } from "./errors.ts";
import type { RateLimitState } from "./limits.ts";

export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_quota: 402,
  plan_not_allowed: 403,
  not_found: 404,
  video_unavailable: 404,
  no_captions: 404,
  idempotency_key_in_use: 409,
  idempotency_key_reused: 422,
  rate_limited: 429,
  job_limit_reached: 429,
  upstream_error: 502,
  unavailable: 503,
  /** Not in SPEC §8: an unexpected server fault, so hosts keep one error shape for it too. */
  internal_error: 500,
} as const;

export type ErrorType = keyof typeof ERROR_STATUS;

export interface HttpReply {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export interface HeaderOptions {
  /** Also send the IETF draft fields RateLimit-Policy and RateLimit (opt-in, SPEC §4). */
  ietf?: boolean;
  /** Policy name in the IETF fields; default "api". */
  policy?: string;
}

export function newRequestId(): string {
  return `req_${randomBytes(12).toString("hex")}`;
}

function wholeSeconds(ms: number): number {
  return Math.max(0, Math.ceil(ms / 1000));
}

/** Headers for every authenticated response, errors and 429 included (SPEC §4). */
export function rateLimitHeaders(state: RateLimitState, options: HeaderOptions = {}): Record<string, string> {
  const reset = wholeSeconds(state.resetMs);
  const remaining = Math.max(0, state.remaining);
  const headers: Record<string, string> = {
    "X-RateLimit-Limit": String(state.limit),
    "X-RateLimit-Remaining": String(remaining),
    "X-RateLimit-Reset": String(reset),
  };
  if (options.ietf) {
    const policy = options.policy ?? "api";
    headers["RateLimit-Policy"] = `"${policy}";q=${state.limit};w=60`;
    headers["RateLimit"] = `"${policy}";r=${remaining};t=${reset}`;
  }
  return headers;
}

/** Retry-After in whole seconds, at least 1 (SPEC §4). */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

export function errorBody(type: ErrorType, message: string, requestId: string, extra: Record<string, unknown> = {}) {
  return { error: { ...extra, type, message }, request_id: requestId };
}

/** An error reply with the SPEC §8 body; rate-limit headers when the caller passes them. */
export function errorReply(
  type: ErrorType,
  message: string,
  options: { requestId: string; extra?: Record<string, unknown>; headers?: Record<string, string> },
): HttpReply {
  return {
    status: ERROR_STATUS[type],
    headers: { "Content-Type": "application/json", "X-Request-Id": options.requestId, ...options.headers },
    body: errorBody(type, message, options.requestId, options.extra),
  };
}

/** 429 rate_limited with Retry-After; the message is exactly "Rate limit exceeded" (SPEC §8). */
export function rateLimitedReply(state: RateLimitState, retryAfterMs: number, requestId: string, options: HeaderOptions = {}): HttpReply {
  return errorReply("rate_limited", "Rate limit exceeded", {
    requestId,
    headers: { ...rateLimitHeaders(state, options), "Retry-After": String(retryAfterSeconds(retryAfterMs)) },
  });
}

/** 402 insufficient_quota naming the remaining and needed counts (SPEC §5). */
export function insufficientReply(remaining: number, needed: number, requestId: string, headers: Record<string, string> = {}): HttpReply {
  return errorReply("insufficient_quota", `Insufficient credits: ${remaining} remaining, ${needed} needed`, {
    requestId,
    extra: { remaining, needed },
    headers,
  });
}

/** 503 unavailable with Retry-After when the quota store cannot be reached (SPEC §8). */
export function unavailableReply(requestId: string, retryAfter = 1, headers: Record<string, string> = {}): HttpReply {
  return errorReply("unavailable", "The quota store is unavailable; retry later", {
    requestId,
    headers: { ...headers, "Retry-After": String(retryAfter) },
  });
}

/** Maps a thrown tollgate error to its reply; other errors are not ours to map (undefined). */
export function replyForError(error: unknown, requestId: string, headers: Record<string, string> = {}): HttpReply | undefined {
  if (!isTollgateError(error)) return undefined;
  switch (error.code) {
    case "unavailable":
      return unavailableReply(requestId, 1, headers);
    case "invalid_input":
    case "unknown_plan":
      return errorReply("invalid_request", error.message, { requestId, headers });
    case "account_not_found":
    case "job_not_found":
      return errorReply("not_found", error.message, { requestId, headers });
    default:
      return errorReply("invalid_request", error.message, { requestId, headers });
  }
}
