/**
 * The framework-neutral request and reply every handler speaks. Adapters (Express, Koa) build
 * an ApiRequest from their own request and copy an HttpReply onto their own response.
 */
import { errorReply, newRequestId, type ErrorType, type HttpReply } from '../../src/index.ts';

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
  /** Parsed JSON body; undefined when the request had none. */
  body: unknown;
  /** Set when the body was sent but is not JSON (or too large): the handler answers 400. */
  bodyError?: string;
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

/** The service's own error types beside tollgate's (SPEC §8): the platform's, and the job cap's 429. */
const SERVICE_STATUS = { video_unavailable: 404, no_captions: 404, job_limit_reached: 429 } as const;

export type ServiceErrorType = ErrorType | keyof typeof SERVICE_STATUS;

/** An SPEC §8 error reply with the given extra headers. */
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

/** The value of one cookie from a Cookie header. */
export function cookie(request: ApiRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return decodeURIComponent(part.slice(at + 1).trim());
  }
  return undefined;
}
