/**
 * Thrown errors to error replies: the platform's typed errors keep their own status and type,
 * tollgate's map through replyForError (503 + Retry-After when the quota store is down), a
 * hold that is not the caller's is the job it names, not found, and so is a grant the account
 * does not have; our own Redis being
 * unreachable is the same 503 (fail closed), and anything else is a 500 that is logged, never
 * shown.
 */
import { isTollgateError } from 'tollgate';
import { errorReply, replyForError, unavailableReply } from 'tollgate/http';
import { isPlatformError } from '../platform/index.ts';
import { fail, type ApiRequest, type HttpReply } from './handler.ts';
import { MESSAGES } from './messages.ts';
import { isRedisDown } from '../redis/client.ts';

export function replyForThrown(request: ApiRequest, error: unknown, headers: Record<string, string> = {}): HttpReply {
  if (isPlatformError(error)) {
    const extra = 'param' in error && typeof error.param === 'string' ? { param: error.param } : {};
    return fail(request, error.code, error.message, { extra, headers });
  }
  if (isTollgateError(error, 'hold_not_found')) {
    return fail(request, 'not_found', MESSAGES.noJob(String((error as { holdId?: unknown }).holdId)), { headers });
  }
  if (isTollgateError(error, 'grant_not_found')) {
    return fail(request, 'not_found', MESSAGES.noGrant(String((error as { grantId?: unknown }).grantId)), { headers });
  }
  if (isTollgateError(error)) return replyForError(error, request.requestId, headers)!;
  if (isRedisDown(error)) return unavailableReply(request.requestId, 1, headers);
  console.error(`${request.requestId} ${request.method} ${request.path}:`, error);
  return errorReply('internal_error', MESSAGES.internal, { requestId: request.requestId, headers });
}

/**
 * An error the web framework raised around the routes rather than a handler: its 4xx (a
 * request it could not read) is 400 invalid_request, anything else goes through
 * replyForThrown. Never the framework's own HTML page, whose stack trace leaks our internals.
 */
export function replyForFrameworkError(request: ApiRequest, error: unknown): HttpReply {
  const { status, statusCode } = (error ?? {}) as { status?: unknown; statusCode?: unknown };
  const code = typeof status === 'number' ? status : statusCode;
  if (typeof code === 'number' && code >= 400 && code < 500) return fail(request, 'invalid_request', MESSAGES.unreadableRequest);
  return replyForThrown(request, error);
}
