/**
 * The website flow (docs/example-service.md). POST /web/login {api_key} is a demo login that needs no
 * password store: a valid API key opens a session, which is a tollgate key of the same account
 * that expires and may only be used on `web`; the cookie holds it (HttpOnly, SameSite=Lax), so
 * requests with the cookie use the separate `web` counter and logout revokes it; the cookie is
 * also Secure when the site is served over HTTPS (web/cookies.ts). The site's forms reach these
 * two through web/signin.ts, which adds the cookie rule and the form's CSRF token. Comments
 * collections reserve the user's credit limit L for the whole crawl (1..10,000 and <= balance)
 * as a budget hold, count toward the active-job cap, and are open to Free accounts.
 */
import type { Tollgate } from 'tollgate';
import { insufficientReply } from 'tollgate/http';
import { SESSION_COOKIE } from '../auth/credentials.ts';
import { collectionBody } from '../api/bodies.ts';
import type { FailedAuth } from '../auth/failedAuth.ts';
import type { AuthedHandler } from '../auth/guard.ts';
import { bodyRefusal, cookie, fail, json, type Handler } from '../http/handler.ts';
import { clearedSessionCookie, sessionCookie } from './cookies.ts';
import type { Site } from './site.ts';
import type { JobStore } from '../jobs/jobStore.ts';
import { MESSAGES } from '../http/messages.ts';
import { COLLECTION_LIMIT } from '../plans.ts';
import { isVideoId } from '../platform/index.ts';
import type { JobRunner } from '../jobs/worker.ts';
import { jobLimitReply, newJobId } from '../jobs/createJob.ts';

export interface WebDeps {
  tollgate: Tollgate;
  failedAuth: FailedAuth;
  store: JobStore;
  runner: JobRunner;
  site: Site;
}

const SESSION_TTL_MS = 24 * 3_600_000;

export function webHandlers(deps: WebDeps) {
  const { tollgate } = deps;

  /** Trades a valid API key for a session key: verified without counting a request, then issued. */
  const login: Handler = async (request) => {
    const blocked = deps.failedAuth.blocked(request);
    if (blocked) return blocked;
    // A body that cannot be read is answered as such, not as a failed sign-in.
    const refused = bodyRefusal(request);
    if (refused) return refused;
    const apiKey = (request.body as { api_key?: unknown } | undefined)?.api_key;
    const unauthorized = fail(request, 'unauthorized', MESSAGES.login);
    if (typeof apiKey !== 'string') return unauthorized;
    const verified = await tollgate.keys.verify(apiKey, { surface: 'api', usage: true });
    if (!verified.ok) return deps.failedAuth.refuse(request, unauthorized);
    const session = await tollgate.keys.issue(verified.subject, { name: 'web session', ttlMs: SESSION_TTL_MS, surfaces: ['web'] });
    const cookieHeader = sessionCookie(request, deps.site, session.key, SESSION_TTL_MS / 1000);
    return json(200, { account_id: verified.subject, plan: verified.usage.plan }, { 'Set-Cookie': cookieHeader });
  };

  /** Revokes the session the cookie holds (once it checks out: a forged cookie revokes nothing) and clears the cookie. */
  const logout: Handler = async (request) => {
    const session = cookie(request, SESSION_COOKIE);
    if (session !== undefined) {
      const verified = await tollgate.keys.verify(session, { surface: 'web', usage: true });
      if (verified.ok) await tollgate.keys.revoke(verified.subject, verified.keyId);
    }
    return json(200, { logged_out: true }, { 'Set-Cookie': clearedSessionCookie(request, deps.site) });
  };

  const createCollection: AuthedHandler = async (request, call) => {
    const refused = bodyRefusal(request);
    if (refused) return refused;
    const body = (request.body ?? {}) as { video_id?: unknown; limit?: unknown };
    if (!isVideoId(body.video_id)) return fail(request, 'invalid_request', MESSAGES.videoId, { extra: { param: 'video_id' } });
    const { min, max } = COLLECTION_LIMIT;
    const limit = body.limit;
    if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < min || limit > max) {
      return fail(request, 'invalid_request', MESSAGES.collectionLimit(min, max), { extra: { param: 'limit' } });
    }
    const jobId = newJobId();
    await deps.store.saveCollection(jobId, call.caller.accountId, body.video_id);
    const outcome = await tollgate.holds.openBudget(call.caller.accountId, { amount: limit, surface: call.caller.surface, holdId: jobId });
    if (!outcome.ok) await deps.store.discard(jobId);
    if (outcome.ok) {
      await deps.runner.enqueue(jobId).catch((e) => console.error('enqueue failed:', e));
      return json(201, collectionBody(outcome.hold, body.video_id), { Location: `/web/collections/${jobId}` });
    }
    if (outcome.reason === 'insufficient') return insufficientReply(outcome.available, outcome.needed, request.requestId);
    if (outcome.reason === 'hold_limit_reached') return jobLimitReply(request, outcome.active, outcome.cap);
    return fail(request, 'invalid_request', MESSAGES.collectionRefused(outcome.reason));
  };

  return { login, logout, createCollection };
}
