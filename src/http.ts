/**
 * `tollgate/http`: tollgate's outcomes as HTTP, for any framework. checkRequest checks and
 * counts one request (what the Express and Koa middlewares run); the reply helpers give the
 * status, the rate-limit headers and the error body `{ error: { type, message }, request_id }`.
 *
 * @module tollgate/http
 */
export {
  ERROR_STATUS,
  errorBody,
  errorReply,
  insufficientReply,
  newRequestId,
  rateLimitHeaders,
  rateLimitedReply,
  replyForError,
  retryAfterSeconds,
  unavailableReply,
  type ErrorType,
  type HeaderOptions,
  type HttpReply,
  type Limited,
} from './replies.ts';
export {
  checkRequest,
  checkRateLimitOptions,
  type RateLimitOptions,
  type RateLimitPass,
  type RateLimitRefusal,
  type RateLimitDecision,
  type RefusalType,
  type PerRequest,
  type StoreErrorMode,
} from './middleware.ts';
export { ipSubject, type IpSubjectOptions } from './ipSubject.ts';
