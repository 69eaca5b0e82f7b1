/**
 * The website flow (SPEC §6, §9). POST /web/login {api_key} is a demo login that needs no
 * password store: a valid key opens a session held in an HttpOnly, SameSite=Lax cookie, and
 * requests with that cookie use the separate `web` counter. Comments collections reserve the
 * user's credit limit L for the whole crawl (1..10,000 and <= balance), count toward the
 * active-job cap, and are open to Free accounts.
 */
import { COLLECTION_LIMIT, insufficientReply, newJobId, type Tollgate } from '../../../src/index.ts';
import type { ApiKeys } from '../apiKeys.ts';
import { collectionBody } from '../bodies.ts';
import type { AuthedHandler } from '../guard.ts';
import { cookie, fail, json, type Handler } from '../http.ts';
import type { JobStore } from '../jobStore.ts';
import { isVideoId } from '../platform/index.ts';
import { SESSION_COOKIE, type Sessions } from '../sessions.ts';
import type { JobRunner } from '../worker.ts';

export interface WebDeps {
  tollgate: Tollgate;
  apiKeys: ApiKeys;
  sessions: Sessions;
  store: JobStore;
  runner: JobRunner;
}

export function webHandlers(deps: WebDeps) {
  const login: Handler = async (request) => {
    const apiKey = (request.body as { api_key?: unknown } | undefined)?.api_key;
    const accountId = typeof apiKey === 'string' ? await deps.apiKeys.verify(apiKey) : null;
    if (accountId === null) return fail(request, 'unauthorized', 'POST /web/login takes {"api_key": "<a valid API key>"}');
    const usage = await deps.tollgate.usage(accountId, 'web');
    const session = await deps.sessions.open(accountId);
    return json(200, { account_id: accountId, plan: usage.plan }, { 'Set-Cookie': session.cookie });
  };

  const logout: Handler = async (request) => {
    const id = cookie(request, SESSION_COOKIE);
    if (id !== undefined) await deps.sessions.close(id);
    return json(200, { logged_out: true }, { 'Set-Cookie': `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0` });
  };

  const createCollection: AuthedHandler = async (request, call) => {
    if (request.bodyError !== undefined) return fail(request, 'invalid_request', request.bodyError);
    const body = (request.body ?? {}) as { video_id?: unknown; limit?: unknown };
    if (!isVideoId(body.video_id)) return fail(request, 'invalid_request', 'video_id must be a video id (11 characters of A-Z a-z 0-9 _ -)', { extra: { param: 'video_id' } });
    const { min, max } = COLLECTION_LIMIT;
    const limit = body.limit;
    if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < min || limit > max) {
      return fail(request, 'invalid_request', `limit must be a whole number of credits ${min}..${max}`, { extra: { param: 'limit' } });
    }
    const jobId = newJobId();
    await deps.store.saveCollection(jobId, call.caller.accountId, body.video_id);
    const outcome = await deps.tollgate.jobs.reserveCollection(call.caller.accountId, { limit, surface: call.caller.surface, jobId });
    if (!outcome.ok) await deps.store.discard(jobId);
    if (outcome.ok) {
      await deps.runner.enqueue(jobId).catch((e) => console.error('enqueue failed:', e));
      return json(201, collectionBody(outcome.job, body.video_id), { Location: `/web/collections/${jobId}` });
    }
    if (outcome.reason === 'insufficient') return insufficientReply(outcome.remaining, outcome.needed, request.requestId);
    if (outcome.reason === 'job_limit_reached') {
      return fail(request, 'job_limit_reached', `Active job limit reached: ${outcome.active} of ${outcome.cap} jobs are running`, { extra: { active: outcome.active, cap: outcome.cap } });
    }
    return fail(request, 'invalid_request', `The collection was refused (${outcome.reason})`);
  };

  return { login, logout, createCollection };
}
