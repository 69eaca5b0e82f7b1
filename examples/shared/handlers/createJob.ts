/**
 * POST /jobs in the order of SPEC §6-7: authenticate (401) and rate limit (429, never cached)
 * are the guard's; then the Idempotency-Key lookup (replay / 422 / 409) -> validation (400) and
 * plan checks (403), which free the key -> resolve the videos -> ONE tollgate.jobs.reserve that
 * re-checks the key, the active-job cap (429, cached), the credits (402) and stores the outcome.
 */
import { newJobId, type BeginOutcome, type IdempotencyClaim, type ReserveOutcome, type StoredOutcome, type Tollgate } from '../../../src/index.ts';
// Stored outcomes carry the job as raw fields; the public API has no decoder for them yet.
import { insufficientReply } from '../../../src/index.ts';
import { jobBody } from '../bodies.ts';
import type { AuthedHandler, Call } from '../guard.ts';
import { fail, json, type ApiRequest, type HttpReply } from '../http.ts';
import { parseJobRequest, type JobSource } from '../jobRequest.ts';
import type { JobStore } from '../jobStore.ts';
import type { VideoPlatform } from '../platform/index.ts';
import type { JobRunner } from '../worker.ts';

export interface CreateJobDeps {
  tollgate: Tollgate;
  platform: VideoPlatform;
  store: JobStore;
  runner: JobRunner;
}

const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

export function createJob(deps: CreateJobDeps): AuthedHandler {
  return async (request, call) => {
    if (request.bodyError !== undefined) return fail(request, 'invalid_request', request.bodyError, { extra: { param: 'body' } });
    const key = request.headers['idempotency-key'];
    if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
      return fail(request, 'invalid_request', 'Idempotency-Key must be 1-255 printable ASCII characters', { extra: { param: 'Idempotency-Key' } });
    }
    const accountId = call.caller.accountId;
    let claim: IdempotencyClaim | undefined;
    if (key !== undefined) {
      const begun: BeginOutcome = await deps.tollgate.idempotency.begin(accountId, key, request.body ?? null);
      if (begun.state !== 'new') return earlyOutcome(request, begun);
      claim = begun.claim;
    }
    let keepClaim = false;
    try {
      const checked = await checkRequest(deps, request, call);
      if ('reply' in checked) return checked.reply;
      const jobId = newJobId();
      await deps.store.saveBulk(jobId, accountId, checked.videos, checked.includeComments);
      keepClaim = true; // from here tollgate.jobs.reserve owns the key: it stores or frees it
      const outcome = await deps.tollgate.jobs.reserve(accountId, {
        videos: checked.videos.length,
        includeComments: checked.includeComments,
        surface: call.caller.surface,
        idempotency: claim,
        jobId,
      });
      if (!outcome.ok || outcome.replayed) await deps.store.discard(jobId);
      if (outcome.ok && !outcome.replayed) await deps.runner.enqueue(jobId).catch((e) => console.error('enqueue failed:', e));
      return reserveReply(request, outcome);
    } finally {
      if (claim !== undefined && !keepClaim) await deps.tollgate.idempotency.release(accountId, claim).catch(() => {});
    }
  };
}

/** Validation, plan and size checks, then the videos resolved; or the 400/403/502 to send. */
async function checkRequest(
  deps: CreateJobDeps,
  request: ApiRequest,
  call: Call,
): Promise<{ reply: HttpReply } | { videos: string[]; includeComments: boolean }> {
  const parsed = parseJobRequest(request.body);
  if (!parsed.ok) return { reply: fail(request, 'invalid_request', parsed.message, { extra: { param: parsed.param } }) };
  const usage = await deps.tollgate.usage(call.caller.accountId, call.caller.surface);
  if (call.caller.surface === 'api' && !usage.jobs.bulkOnApi) {
    return { reply: fail(request, 'plan_not_allowed', `The ${usage.plan} plan cannot create bulk jobs through the API`, { extra: { plan: usage.plan } }) };
  }
  const videos = await resolve(deps.platform, parsed.source);
  if (videos.length === 0 || videos.length > usage.jobs.maxVideos) {
    return { reply: fail(request, 'invalid_request', `A job takes 1 to ${usage.jobs.maxVideos} videos; this one resolved to ${videos.length}`, { extra: { param: 'video_ids', max: usage.jobs.maxVideos } }) };
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
      return fail(request, 'idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
    case 'in_use':
      return fail(request, 'idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry shortly');
  }
}

function replayed(request: ApiRequest, stored: StoredOutcome): HttpReply {
  const headers = { 'Idempotent-Replayed': 'true' };
  if (stored.kind === 'job') return created(stored.job, headers);
  return jobLimitReply(request, stored.active, stored.cap, headers);
}

function reserveReply(request: ApiRequest, outcome: ReserveOutcome): HttpReply {
  if (outcome.ok) return created(outcome.job, outcome.replayed ? { 'Idempotent-Replayed': 'true' } : {});
  switch (outcome.reason) {
    case 'job_limit_reached':
      return jobLimitReply(request, outcome.active, outcome.cap, outcome.replayed ? { 'Idempotent-Replayed': 'true' } : {});
    case 'insufficient':
      return insufficientReply(outcome.remaining, outcome.needed, request.requestId);
    case 'plan_not_allowed':
      return fail(request, 'plan_not_allowed', `The ${outcome.plan} plan cannot create bulk jobs through the API`, { extra: { plan: outcome.plan } });
    case 'too_many_videos':
      return fail(request, 'invalid_request', `A job takes at most ${outcome.max} videos`, { extra: { param: 'video_ids', max: outcome.max } });
    case 'idempotency_key_reused':
      return fail(request, 'idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
    case 'idempotency_key_in_use':
      return fail(request, 'idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry shortly');
  }
}

function created(job: Parameters<typeof jobBody>[0], headers: Record<string, string>): HttpReply {
  return json(201, jobBody(job), { Location: `/jobs/${job.id}`, ...headers });
}

function jobLimitReply(request: ApiRequest, active: number, cap: number, headers: Record<string, string>): HttpReply {
  return fail(request, 'job_limit_reached', `Active job limit reached: ${active} of ${cap} jobs are running`, { extra: { active, cap }, headers });
}
