/**
 * The pages' errors, read as sentences for a person: the same error the JSON routes
 * answer (its status and headers kept: Retry-After, the rate-limit headers), told as what
 * happened and what to do. A 402 says how many credits are left and when the cycle renews; a
 * 429 when to try again.
 */
import type { Usage } from 'tollgate';
import type { HttpReply } from '../http/handler.ts';
import { format } from './format.ts';
import { render } from './render.ts';

export interface ErrorBody {
  type: string;
  message: string;
  remaining?: number;
  needed?: number;
  active?: number;
  cap?: number;
}

export interface ErrorContext {
  /** The account's usage, read for a 402 (when its cycle renews). */
  usage?: Usage | null;
  /** The 429 is the sign-in guard's (failed key checks from this address), not the web budget. */
  failedSignIns?: boolean;
  /** The page is part of the signed-in site (show its navigation). */
  signedIn: boolean;
  /** Where "go back" leads. */
  back?: { href: string; text: string };
}

/** True for an error body in JSON, which a page turns into its own words. */
export function isJsonError(reply: HttpReply): boolean {
  return reply.status >= 400 && (reply.headers['Content-Type'] ?? '').startsWith('application/json');
}

export function errorOf(reply: HttpReply): ErrorBody {
  const error = (reply.body as { error?: ErrorBody } | undefined)?.error;
  return error ?? { type: 'internal_error', message: 'Something went wrong' };
}

/** A headline and the sentences that explain it. */
export function explain(reply: HttpReply, context: ErrorContext): { title: string; sentences: string[] } {
  const error = errorOf(reply);
  const retry = Number(reply.headers['Retry-After'] ?? 0);
  const again = retry > 0 ? `Try again ${format.wait(retry)} (after ${format.time(Date.now() + retry * 1000)}).` : 'Try again in a minute.';
  switch (error.type) {
    case 'insufficient_quota': {
      const usage = context.usage;
      const renews = usage ? ` Your ${format.count(usage.credits.allowance, 'credit')} renew on ${format.day(usage.cycle.end)}, ${renewIn(usage)}.` : '';
      return {
        title: 'Not enough credits',
        sentences: [
          `You have ${format.count(error.remaining ?? 0, 'credit')} left and this needs ${format.number(error.needed ?? 0)}.${renews}`,
          'Nothing was charged.',
        ],
      };
    }
    case 'rate_limited': {
      if (context.failedSignIns) {
        return { title: 'Too many failed sign-ins', sentences: [`Too many keys that did not check out were tried from your network this minute. ${again}`] };
      }
      const limit = reply.headers['X-RateLimit-Limit'];
      const budget = limit === undefined ? 'all the website requests of your plan' : `all ${limit} website requests your plan allows`;
      return { title: 'Slow down a little', sentences: [`You have used ${budget} this minute. ${again}`, 'Nothing was charged.'] };
    }
    case 'job_limit_reached':
      return {
        title: 'Too many jobs running',
        sentences: [
          `${format.number(error.active ?? 0)} of your ${format.number(error.cap ?? 0)} jobs and collections are still running, as many as your plan allows. Wait for one to finish, or cancel one.`,
          'Nothing was charged.',
        ],
      };
    case 'unauthorized':
      return { title: 'Please sign in', sentences: ['Your session has ended or is not valid. Sign in again with your API key.'] };
    case 'forbidden':
      return { title: 'Refused', sentences: [`${error.message}.`, 'Nothing was done.'] };
    case 'plan_not_allowed':
      return { title: 'Not on your plan', sentences: [`${error.message}.`] };
    case 'not_found':
      return { title: 'Not found', sentences: [`${error.message}.`] };
    case 'video_unavailable':
    case 'no_captions':
      return { title: error.type === 'no_captions' ? 'No captions' : 'Video unavailable', sentences: [`${error.message}.`, 'Nothing was charged.'] };
    case 'invalid_request':
      return { title: 'Please check what you entered', sentences: [`${capitalize(error.message)}.`, 'Nothing was charged.'] };
    case 'upstream_error':
      return { title: 'The video platform did not answer', sentences: ['We could not reach the video platform just now. Nothing was charged.', again] };
    case 'unavailable':
      return { title: 'Temporarily unavailable', sentences: ['The service cannot check credits right now, so it did nothing and charged nothing.', again] };
    case 'idempotency_key_in_use':
      return { title: 'Still working on it', sentences: ['The same form is still being handled. Reload the page in a moment.'] };
    case 'idempotency_key_reused':
      return { title: 'Form already used', sentences: ['This form was already sent with other values. Reload the page to start again.'] };
    default:
      return { title: 'Something went wrong', sentences: ['Something went wrong on our side; nothing was charged. Please try again.'] };
  }
}

export function errorPage(reply: HttpReply, context: ErrorContext): HttpReply {
  const { title, sentences } = explain(reply, context);
  const { 'Content-Type': _json, ...headers } = reply.headers;
  const requestId = (reply.body as { request_id?: unknown } | undefined)?.request_id;
  return render(
    'error',
    {
      title,
      nav: null,
      signedIn: context.signedIn,
      sentences,
      status: reply.status,
      requestId: typeof requestId === 'string' ? requestId : null,
      back: context.back ?? (context.signedIn ? { href: '/dashboard', text: 'Back to your dashboard' } : { href: '/', text: 'Back to sign-in' }),
    },
    reply.status,
    headers,
  );
}

function renewIn(usage: Usage): string {
  const days = format.daysLeft(usage.now, usage.cycle.end);
  return days <= 1 ? 'within a day' : `in ${days} days`;
}

/** "limit must be…" -> "Limit must be…"; a field name with an underscore stays as written. */
function capitalize(text: string): string {
  return /^[a-z]+\b/.test(text) ? text.charAt(0).toUpperCase() + text.slice(1) : text;
}
