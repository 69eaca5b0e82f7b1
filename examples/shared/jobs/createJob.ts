/**
 * POST /jobs in this order: authenticate (401) and rate limit (429, never cached)
 * are the guard's; then the Idempotency-Key lookup (replay / 422 / 409) -> validation (400) and
 * plan checks (403), which free the key -> resolve the videos -> ONE tollgate.holds.open that
 * re-checks the key, the active-job cap (429, cached), the credits (402) and stores the outcome.
 * A job is an items hold: one item per video, 1 credit required for its transcript and, with
 * comments, 1 optional for its Top page.
 */
import { randomBytes } from 'node:crypto';
import type { BeginOutcome, Hold, IdempotencyClaim, OpenOutcome, StoredOutcome, Tollgate } from 'tollgate';
import { insufficientReply } from 'tollgate/http';
import { jobBody } from '../api/bodies.ts';
import type { AuthedHandler, Call } from '../auth/guard.ts';
import { bodyRefusal, fail, json, type ApiRequest, type HttpReply } from '../http/handler.ts';
import { parseJobRequest, type JobSource } from './jobRequest.ts';
import type { JobStore } from './jobStore.ts';
import { MESSAGES } from '../http/messages.ts';
import type { VideoPlatform } from '../platform/index.ts';
import type { JobRunner } from './worker.ts';

export interface CreateJobDeps {
  tollgate: Tollgate;
  platform: VideoPlatform;
  store: JobStore;
  runner: JobRunner;
}

const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

/**
 * How long an Idempotency-Key claim lasts unless renewed (tollgate's idempotencyLockMs): the
 * longest a server that stopped mid-request blocks the key. Renewed every third of it.
 */
export const IDEMPOTENCY_LOCK_MS = 5_000;

/** Job ids (hold ids the service picks), as the API has always shown them. */
export function newJobId(): string {
  return `job_${randomBytes(12).toString('base64url')}`;
}

export function createJob(deps: CreateJobDeps): AuthedHandler {
  return async (request, call) => {
    const refused = bodyRefusal(request);
    if (refused) return refused;
    const key = request.headers['idempotency-key'];
    if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
      return fail(request, 'invalid_request', MESSAGES.idempotencyKeyMalformed, { extra: { param: 'Idempotency-Key' } });
    }
    const accountId = call.caller.accountId;
    let claim: IdempotencyClaim | undefined;
    if (key !== undefined) {
      // The fingerprint is of the body as sent, before validation (docs/example-service.md#idempotency-key).
      const begun: BeginOutcome = await deps.tollgate.idempotency.begin(accountId, key, request.body ?? null);
      if (begun.state !== 'new') return earlyOutcome(request, begun);
      claim = begun.claim;
    }
    // The claim is a short lease (IDEMPOTENCY_LOCK_MS): renewed while this request
    // resolves the videos, so it only outlives a server that stopped, and not by long.
    const renewing = claim === undefined ? undefined : keepRenewing(deps.tollgate, accountId, claim);
    let opened = false;
    try {
      const checked = await checkRequest(deps, request, call);
      if ('reply' in checked) return checked.reply;
      const jobId = newJobId();
      await deps.store.saveBulk(jobId, accountId, checked.videos, checked.includeComments);
      const outcome = await deps.tollgate.holds.open(accountId, {
        items: checked.videos.length,
        perItem: { required: 1, optional: checked.includeComments ? 1 : 0 },
        surface: call.caller.surface,
        idempotency: claim,
        holdId: jobId,
      });
      opened = true; // holds.open stored the outcome under the key, or freed it
      if (!outcome.ok || outcome.replayed) await deps.store.discard(jobId);
      if (outcome.ok && !outcome.replayed) await deps.runner.enqueue(jobId).catch((e) => console.error('enqueue failed:', e));
      return openReply(request, outcome);
    } finally {
      renewing?.stop();
      // Not opened (a 400/403, or Redis failed on the way): free the key for a retry. Freeing
      // only drops a claim that is still this request's and still pending, so it is harmless
      // even when an open that timed out here did run.
      if (claim !== undefined && !opened) await deps.tollgate.idempotency.release(accountId, claim).catch(() => {});
    }
  };
}

/** Renews the claim every third of its lease until stopped, or until it is no longer this request's. */
function keepRenewing(tollgate: Tollgate, accountId: string, claim: IdempotencyClaim): { stop(): void } {
  const timer = setInterval(() => {
    tollgate.idempotency.renew(accountId, claim).then(
      (held) => {
        if (!held) clearInterval(timer);
      },
      // Redis is away: the claim may lapse; holds.open re-checks the key, so that costs a 409 at worst.
      () => {},
    );
  }, IDEMPOTENCY_LOCK_MS / 3);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** Validation, plan and size checks, then the videos resolved; or the 400/403/502 to send. */
async function checkRequest(
  deps: CreateJobDeps,
  request: ApiRequest,
  call: Call,
): Promise<{ reply: HttpReply } | { videos: string[]; includeComments: boolean }> {
  const parsed = parseJobRequest(request.body);
  if (!parsed.ok) return { reply: fail(request, 'invalid_request', parsed.message, { extra: { param: parsed.param } }) };
  const plan = await deps.tollgate.accounts.limits(call.caller.accountId);
  if (!plan.holds.surfaces.includes(call.caller.surface)) return { reply: planNotAllowed(request, plan.name) };
  const videos = await resolve(deps.platform, parsed.source);
  const max = plan.holds.maxItems;
  if (videos.length === 0 || videos.length > max) {
    return { reply: fail(request, 'invalid_request', MESSAGES.videosPerJob(max, videos.length), { extra: { param: 'video_ids', max } }) };
  }
  return { videos, includeComments: parsed.includeComments };
}

async function resolve(platform: VideoPlatform, source: JobSource): Promise<string[]> {
  if (source.kind === 'video_ids') return source.ids;
  const ids = source.kind === 'channel_id' ? await platform.listChannelVideos(source.id) : await platform.listPlaylistVideos(source.id);
  return [...new Set(ids)];
}

function earlyOutcome(request: ApiRequest, begun: Exclude<BeginOutcome, { state: 'new' }>): HttpReply {
  switch (begun.state) {
    case 'replay':
      return replayed(request, begun.outcome);
    case 'reused':
      return fail(request, 'idempotency_key_reused', MESSAGES.idempotencyKeyReused);
    case 'in_use':
      return inUse(request);
  }
}

function replayed(request: ApiRequest, stored: StoredOutcome): HttpReply {
  const headers = { 'Idempotent-Replayed': 'true' };
  if (stored.kind === 'hold') return created(stored.hold, headers);
  return jobLimitReply(request, stored.active, stored.cap, headers);
}

function openReply(request: ApiRequest, outcome: OpenOutcome): HttpReply {
  if (outcome.ok) return created(outcome.hold, outcome.replayed ? { 'Idempotent-Replayed': 'true' } : {});
  switch (outcome.reason) {
    case 'hold_limit_reached':
      return jobLimitReply(request, outcome.active, outcome.cap, outcome.replayed ? { 'Idempotent-Replayed': 'true' } : {});
    case 'insufficient':
      return insufficientReply(outcome.available, outcome.needed, request.requestId);
    case 'surface_not_allowed':
      return planNotAllowed(request, undefined);
    case 'too_many_items':
      return fail(request, 'invalid_request', MESSAGES.tooManyVideos(outcome.max), { extra: { param: 'video_ids', max: outcome.max } });
    case 'idempotency_key_reused':
      return fail(request, 'idempotency_key_reused', MESSAGES.idempotencyKeyReused);
    case 'idempotency_key_in_use':
      return inUse(request);
  }
}

/**
 * 409 while another request holds the key. That request is almost always done within moments,
 * so the client is told to retry in 1 s; a claim whose server crashed lapses within
 * idempotencyLockMs (5 s), a few such retries.
 */
function inUse(request: ApiRequest): HttpReply {
  return fail(request, 'idempotency_key_in_use', MESSAGES.idempotencyKeyInUse, { headers: { 'Retry-After': '1' } });
}

function created(hold: Hold, headers: Record<string, string>): HttpReply {
  return json(201, jobBody(hold), { Location: `/jobs/${hold.id}`, ...headers });
}

function planNotAllowed(request: ApiRequest, plan: string | undefined): HttpReply {
  return fail(request, 'plan_not_allowed', MESSAGES.bulkNotOnPlan(plan ?? 'current'), { extra: plan === undefined ? {} : { plan } });
}

/** The service calls the open-job cap's 429 job_limit_reached (tollgate: hold_limit_reached). */
export function jobLimitReply(request: ApiRequest, active: number, cap: number, headers: Record<string, string> = {}): HttpReply {
  return fail(request, 'job_limit_reached', MESSAGES.jobLimit(active, cap), { extra: { active, cap }, headers });
}
