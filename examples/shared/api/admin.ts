/**
 * Admin endpoints (docs/example-service.md#endpoints), mounted only when ADMIN_TOKEN is set and guarded by
 * `Authorization: Bearer <ADMIN_TOKEN>` (constant-time compare). They are the host's own
 * back office: no rate limit, no credits; a wrong token counts against its IP like any failed
 * key check (auth/failedAuth.ts).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Tollgate } from 'tollgate';
import { holdBody } from './bodies.ts';
import { replyForThrown } from '../http/errors.ts';
import type { FailedAuth } from '../auth/failedAuth.ts';
import { bodyRefusal, fail, json, type ApiRequest, type Handler, type HttpReply } from '../http/handler.ts';
import type { JobStore } from '../jobs/jobStore.ts';
import { MESSAGES } from '../http/messages.ts';
import type { DemoOAuth } from '../auth/oauth.ts';
import type { JobRunner } from '../jobs/worker.ts';

export interface AdminDeps {
  tollgate: Tollgate;
  failedAuth: FailedAuth;
  store: JobStore;
  runner: JobRunner;
  oauth: DemoOAuth;
  adminToken: string;
}

export type AdminHandler = (request: ApiRequest, body: Record<string, unknown>) => Promise<HttpReply>;

/**
 * Wraps an admin handler: a blocked IP is refused, the admin token is checked (a wrong one
 * counts against the IP), the body is read as a JSON object, and a thrown error becomes its
 * error reply.
 */
export function adminGuard(deps: Pick<AdminDeps, 'failedAuth' | 'adminToken'>): (handler: AdminHandler) => Handler {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  const expected = digest(deps.adminToken);
  return (handler) => async (request) => {
    const blocked = deps.failedAuth.blocked(request);
    if (blocked) return blocked;
    const token = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (token === undefined || !timingSafeEqual(digest(token), expected)) {
      const unauthorized = fail(request, 'unauthorized', MESSAGES.adminUnauthorized);
      return token === undefined ? unauthorized : deps.failedAuth.refuse(request, unauthorized);
    }
    const refused = bodyRefusal(request);
    if (refused) return refused;
    const body = request.body ?? {};
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return fail(request, 'invalid_request', MESSAGES.notAnObject);
    try {
      return await handler(request, body as Record<string, unknown>);
    } catch (error) {
      return replyForThrown(request, error);
    }
  };
}

export function adminHandlers(deps: AdminDeps) {
  const { tollgate } = deps;
  const admin = adminGuard(deps);

  const createAccount = admin(async (request, body) => {
    const signupAt = body.signup_at === undefined ? undefined : instant(body.signup_at);
    if (signupAt === null) return fail(request, 'invalid_request', MESSAGES.signupAt);
    const { accountId, apiKey, cycle, plan } = await openAccount(tollgate, body.plan as string, signupAt);
    return json(201, { account_id: accountId, api_key: apiKey, plan, cycle: cycleBody(cycle) });
  });

  const startCycle = admin(async (request) => {
    const cycle = await tollgate.accounts.startCycle(request.params.id ?? '');
    return json(200, { account_id: request.params.id, cycle: cycleBody(cycle) });
  });

  const changePlan = admin(async (request, body) => {
    const startNow = body.start_new_cycle === true;
    const cycle = await tollgate.accounts.changePlan(request.params.id ?? '', body.plan as string, { startNewCycle: startNow });
    return json(200, { account_id: request.params.id, plan: body.plan, cycle: cycleBody(cycle) });
  });

  const oauthToken = admin(async (request) => {
    await tollgate.accounts.limits(request.params.id ?? '');
    return json(201, deps.oauth.issue(request.params.id!));
  });

  const processJob = admin(async (request, body) => {
    const count = body.count ?? 1;
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1 || count > 10_000) {
      return fail(request, 'invalid_request', MESSAGES.processCount);
    }
    const jobId = request.params.id ?? '';
    const meta = /^[A-Za-z0-9_-]{1,64}$/.test(jobId) ? await deps.store.meta(jobId) : null;
    if (meta === null) return fail(request, 'not_found', MESSAGES.unknownJob(jobId));
    const processed = await deps.runner.process(jobId, meta, count);
    const hold = await tollgate.holds.get(meta.account, jobId);
    return json(200, { processed, job: holdBody(hold, meta.videoId) });
  });

  const sweep = admin(async () => {
    const swept = await tollgate.holds.sweep();
    return json(200, { accounts: swept.subjects, ended: swept.ended });
  });

  return { createAccount, startCycle, changePlan, oauthToken, processJob, sweep };
}

/**
 * Opens an account on a plan with its API key (shown once, here): a tollgate key that may only
 * be used on `api`, so it can never serve as a website session.
 */
export async function openAccount(tollgate: Tollgate, plan: string, signupAt?: number) {
  const accountId = `acct_${randomBytes(8).toString('hex')}`;
  const created = await tollgate.accounts.create(accountId, { plan, signupAt });
  const { key } = await tollgate.keys.issue(accountId, { name: 'api key', surfaces: ['api'] });
  return { accountId, apiKey: key, plan: created.plan, cycle: created.cycle };
}

/** An instant given as an ISO 8601 string or ms since the epoch; null when it is neither. */
export function instant(value: unknown): number | null {
  const ms = typeof value === 'string' ? Date.parse(value) : value;
  return typeof ms === 'number' && Number.isSafeInteger(ms) && ms >= 0 ? ms : null;
}

function cycleBody(cycle: { id: number; start: number; end: number }) {
  return { id: cycle.id, start: new Date(cycle.start).toISOString(), end: new Date(cycle.end).toISOString() };
}
