/**
 * Saved-job reads, export and cancel (docs/example-service.md): GET /jobs, GET /jobs/:id,
 * GET /jobs/:id/results, DELETE /jobs/:id. All free. Another account's job is not found.
 * Cancel refunds every undelivered item and unused comment reservation, once.
 */
import type { Hold, Tollgate } from 'tollgate';
import { holdBody } from '../api/bodies.ts';
import type { AuthedHandler } from '../auth/guard.ts';
import { fail, json, type ApiRequest } from '../http/handler.ts';
import type { JobStore } from './jobStore.ts';
import { MESSAGES } from '../http/messages.ts';

const JOB_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function jobHandlers(deps: { tollgate: Tollgate; store: JobStore }) {
  const { tollgate, store } = deps;
  const body = async (hold: Hold) => holdBody(hold, hold.kind === 'budget' ? ((await store.meta(hold.id))?.videoId ?? null) : null);
  const notFound = (request: ApiRequest) => fail(request, 'not_found', MESSAGES.noJob(String(request.params.id)));

  const list: AuthedHandler = async (request, call) => {
    const offset = page(request.query.offset, 0, Number.MAX_SAFE_INTEGER);
    const limit = page(request.query.limit, 50, 1000);
    if (offset === null || limit === null) return fail(request, 'invalid_request', MESSAGES.page);
    const listed = await tollgate.holds.list(call.caller.accountId, { offset, limit });
    return json(200, { jobs: await Promise.all(listed.holds.map(body)), total: listed.total, active: listed.active, offset, limit });
  };

  const get: AuthedHandler = async (request, call) => {
    if (!JOB_ID.test(request.params.id ?? '')) return notFound(request);
    return json(200, await body(await tollgate.holds.get(call.caller.accountId, request.params.id!)));
  };

  const results: AuthedHandler = async (request, call) => {
    if (!JOB_ID.test(request.params.id ?? '')) return notFound(request);
    const hold = await tollgate.holds.get(call.caller.accountId, request.params.id!);
    const offset = page(request.query.offset, 0, Number.MAX_SAFE_INTEGER);
    const limit = page(request.query.limit, 100, 1000);
    if (offset === null || limit === null) return fail(request, 'invalid_request', MESSAGES.page);
    const saved = await store.results(hold.id, offset, limit);
    const next = offset + saved.items.length < saved.total ? offset + saved.items.length : null;
    return json(200, { job: await body(hold), total: saved.total, offset, next_offset: next, results: saved.items });
  };

  const cancel: AuthedHandler = async (request, call) => {
    if (!JOB_ID.test(request.params.id ?? '')) return notFound(request);
    const ended = await tollgate.holds.cancel(call.caller.accountId, request.params.id!);
    return json(200, await body(ended.hold));
  };

  return { list, get, results, cancel };
}

function page(value: string | undefined, fallback: number, max: number): number | null {
  if (value === undefined) return fallback;
  if (!/^\d{1,15}$/.test(value)) return null;
  const n = Number(value);
  return n <= max ? n : null;
}
