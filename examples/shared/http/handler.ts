/**
 * The framework-neutral request and reply every handler speaks. Adapters (Express, Koa) build
 * an ApiRequest from their own request and copy an HttpReply onto their own response.
 */
import { parseCookie } from 'cookie';
import { errorReply, newRequestId, type ErrorType, type HttpReply } from 'tollgate/http';
import type { BodyError } from './body.ts';

export type { HttpReply };

export interface ApiRequest {
  method: string;
  /** The request path without the query string. */
  path: string;
  params: Record<string, string>;
  /** First value of each query parameter. */
  query: Record<string, string | undefined>;
  /** Lower-case header names, first value of each. */
  headers: Record<string, string | undefined>;
  /** The parsed body (JSON, or a form's fields); undefined when the request had none. */
  body: unknown;
  /** The media type the body came as (`application/json`, ...; '' without Content-Type); undefined without a body. */
  bodyType?: string;
  /**
   * Set when a body was sent that cannot be taken (body.ts): not JSON or too deep (400), too
   * large (413), a media type the route does not read or another charset than UTF-8 (415). A
   * route that takes a body answers it (bodyRefusal) where its order puts body checks.
   */
  bodyError?: BodyError;
  /** The address the request came from (the socket's peer), for limits per client IP. */
  ip?: string;
  /** The connection is TLS: the site is served over HTTPS (web/site.ts). */
  secure?: boolean;
  /** Filled in by the service once the request id is chosen. */
  requestId: string;
}

export type Handler = (request: ApiRequest) => Promise<HttpReply>;

export function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpReply {
  return { status, headers: { 'Content-Type': 'application/json', ...headers }, body };
}

/**
 * The service's own error types beside tollgate's (ERROR_STATUS): the platform's, the job
 * cap's 429, a plan without bulk jobs, the back office's refused grants and refunds, and the
 * HTTP layer's own refusals.
 */
export const SERVICE_STATUS = {
  plan_not_allowed: 403,
  forbidden: 403,
  video_unavailable: 404,
  no_captions: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  grant_limit_reached: 409,
  exceeds_charge: 409,
  job_limit_reached: 429,
  upstream_error: 502,
} as const;

export type ServiceErrorType = ErrorType | keyof typeof SERVICE_STATUS;

/** An error reply with the given extra headers. */
export function fail(
  request: ApiRequest,
  type: ServiceErrorType,
  message: string,
  options: { extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
): HttpReply {
  const status = (SERVICE_STATUS as Record<string, number>)[type];
  return errorReply(type, message, { requestId: request.requestId, ...(status === undefined ? {} : { status }), ...options });
}

export function withHeaders(reply: HttpReply, headers: Record<string, string>): HttpReply {
  return { ...reply, headers: { ...reply.headers, ...headers } };
}

export { newRequestId };

/** False when the path holds a `%` that does not start valid UTF-8 percent-encoding (`/jobs/%zz`). */
export function isDecodablePath(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/** The error reply (400, 413 or 415) to a body the route cannot take; undefined when it can. */
export function bodyRefusal(request: ApiRequest): HttpReply | undefined {
  const error = request.bodyError;
  return error === undefined
    ? undefined
    : fail(request, error.type, error.message, { extra: { param: 'body' }, ...(error.headers ? { headers: error.headers } : {}) });
}

/**
 * The value of one cookie from the Cookie header, parsed by `cookie` (RFC 6265). A value that
 * is not valid percent-encoding (`tg_session=%zz`) is treated as absent, as a cookie that was
 * never set.
 */
export function cookie(request: ApiRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  return parseCookie(header, { decode: decodeOrSkip })[name];
}

function decodeOrSkip(value: string): string | undefined {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}
