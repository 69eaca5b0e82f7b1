/**
 * Admin endpoints (SPEC §9), mounted only when ADMIN_TOKEN is set and guarded by
 * `Authorization: Bearer <ADMIN_TOKEN>` (constant-time compare). They are the host's own
 * back office: no rate limit, no credits.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Tollgate } from '../../../src/index.ts';
import type { ApiKeys } from '../apiKeys.ts';
import { collectionBody, jobBody } from '../bodies.ts';
import { replyForThrown } from '../errors.ts';
import { fail, json, type ApiRequest, type Handler, type HttpReply } from '../http.ts';
import type { JobStore } from '../jobStore.ts';
import type { DemoOAuth } from '../oauth.ts';
import type { JobRunner } from '../worker.ts';

export interface AdminDeps {
  tollgate: Tollgate;
  apiKeys: ApiKeys;
  store: JobStore;
  runner: JobRunner;
  oauth: DemoOAuth;
  adminToken: string;
}

type AdminHandler = (request: ApiRequest, body: Record<string, unknown>) => Promise<HttpReply>;

export function adminHandlers(deps: AdminDeps) {
  const { tollgate } = deps;
  const digest = (s: string) => createHash('sha256').update(s).digest();
  const expected = digest(deps.adminToken);
  const admin = (handler: AdminHandler): Handler => async (request) => {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (token === undefined || !timingSafeEqual(digest(token), expected)) {
      return fail(request, 'unauthorized', 'Admin endpoints need Authorization: Bearer <ADMIN_TOKEN>');
    }
    if (request.bodyError !== undefined) return fail(request, 'invalid_request', request.bodyError);
    const body = request.body ?? {};
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return fail(request, 'invalid_request', 'The body must be a JSON object');
    try {
      return await handler(request, body as Record<string, unknown>);
    } catch (error) {
      return replyForThrown(request, error);
    }
  };

  const createAccount = admin(async (request, body) => {
    const signupAt = body.signup_at === undefined ? undefined : instant(body.signup_at);
    if (signupAt === null) return fail(request, 'invalid_request', 'signup_at must be an ISO 8601 date or ms since the epoch');
    const accountId = `acct_${randomBytes(8).toString('hex')}`;
    const created = await tollgate.accounts.create(accountId, { plan: body.plan as string, signupAt });
    const apiKey = await deps.apiKeys.issue(accountId);
    return json(201, { account_id: accountId, api_key: apiKey, plan: created.plan, cycle: cycleBody(created.cycle) });
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
    await tollgate.usage(request.params.id ?? '');
    return json(201, deps.oauth.issue(request.params.id!));
  });

  const processJob = admin(async (request, body) => {
    const count = body.count ?? 1;
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1 || count > 10_000) {
      return fail(request, 'invalid_request', 'count must be a whole number 1..10000');
    }
    const jobId = request.params.id ?? '';
    const meta = /^[A-Za-z0-9_-]{1,64}$/.test(jobId) ? await deps.store.meta(jobId) : null;
    if (meta === null) return fail(request, 'not_found', `No job "${jobId.slice(0, 64)}"`);
    const processed = await deps.runner.process(jobId, meta, count);
    const job = await tollgate.jobs.get(meta.account, jobId);
    return json(200, { processed, job: meta.kind === 'bulk' ? jobBody(job) : collectionBody(job, meta.videoId) });
  });

  const sweep = admin(async () => json(200, await tollgate.jobs.sweep()));

  return { createAccount, startCycle, changePlan, oauthToken, processJob, sweep };
}

function instant(value: unknown): number | null {
  const ms = typeof value === 'string' ? Date.parse(value) : value;
  return typeof ms === 'number' && Number.isSafeInteger(ms) && ms >= 0 ? ms : null;
}

function cycleBody(cycle: { id: number; start: number; end: number }) {
  return { id: cycle.id, start: new Date(cycle.start).toISOString(), end: new Date(cycle.end).toISOString() };
}
