/**
 * Thrown errors to SPEC §8 replies: the platform's typed errors keep their own status and type,
 * tollgate's map through replyForError (503 + Retry-After when the quota store is down), and
 * anything else is a 500 that is logged, never shown.
 */
import { isTollgateError, replyForError } from '../../src/index.ts';
import { isPlatformError } from './platform/index.ts';
import { fail, json, type ApiRequest, type HttpReply } from './http.ts';

export function replyForThrown(request: ApiRequest, error: unknown, headers: Record<string, string> = {}): HttpReply {
  if (isPlatformError(error)) {
    const extra = 'param' in error && typeof error.param === 'string' ? { param: error.param } : {};
    return fail(request, error.code, error.message, { extra, headers });
  }
  if (isTollgateError(error)) return replyForError(error, request.requestId, headers)!;
  console.error(`${request.requestId} ${request.method} ${request.path}:`, error);
  return json(
    500,
    { error: { type: 'internal_error', message: 'Internal server error' }, request_id: request.requestId },
    { ...headers, 'X-Request-Id': request.requestId },
  );
}
