/**
 * The signed-in site's pages (on the `web` surface; docs/example-service.md): the dashboard, transcripts,
 * comments collections and bulk jobs. Each page is an AuthedHandler behind page.ts (session,
 * cookie rule, CSRF, the `web` budget, errors as sentences); the work itself is done by the
 * same handlers as the JSON routes (the transcript's charge order, the collection's bounds,
 * the job's schema and Idempotency-Key), so the site and the API cannot drift apart. Every
 * number shown is read from tollgate: usage, the sources of credits (grants), holds and the
 * per-day history.
 */
import { randomUUID } from 'node:crypto';
import type { Grant, Hold, PlanTable, Tollgate, Usage } from 'tollgate';
import { collectionBody, jobBody, spendOrder } from '../api/bodies.ts';
import type { Price } from '../auth/credentials.ts';
import type { AuthedHandler } from '../auth/guard.ts';
import { fail, type ApiRequest, type HttpReply } from '../http/handler.ts';
import type { JobStore } from '../jobs/jobStore.ts';
import { MESSAGES } from '../http/messages.ts';
import { COLLECTION_LIMIT } from '../plans.ts';
import { TRANSCRIPT_FORMATS } from '../platform/index.ts';
import { historyDays, spendChart } from './chart.ts';
import { CSRF_FIELD, expectedToken } from './csrf.ts';
import { format } from './format.ts';
import { formFields } from './forms.ts';
import type { Receipt, TranscriptReceipts } from './receipts.ts';
import type { FiredThreshold, LowBalanceRecord } from '../events/lowBalance.ts';
import { redirect, render, type PageData } from './render.ts';

export interface PageDeps {
  tollgate: Tollgate;
  store: JobStore;
  receipts: TranscriptReceipts;
  plans: PlanTable;
  /** Days of per-day history tollgate keeps (createTollgate's history.days). */
  historyKeptDays: number;
  /** The thresholds that fired in an account's cycle (events/lowBalance.ts), for the dashboard's notice. */
  lowBalance: LowBalanceRecord;
  /** The JSON routes' own handlers, run by the pages' forms. */
  transcript: AuthedHandler;
  createCollection: AuthedHandler;
  createJob: AuthedHandler;
  cancelJob: AuthedHandler;
}

/** One job or collection as the pages show it, in the API's words (api/bodies.ts). */
export interface JobView {
  id: string;
  kind: 'bulk' | 'collection';
  href: string;
  /** The JSON the progress script polls for it. */
  json: string;
  status: string;
  open: boolean;
  /** Units done of the total: videos settled of N, or credits used of the limit L. */
  done: number;
  total: number;
  unit: string;
  reserved: number;
  spent: number;
  refunded: number;
  refundedToEndedCycle: number;
  createdAt: string;
  finishedAt: string | null;
  videoId: string | null;
  includeComments: boolean;
  delivered: number;
  failed: number;
  commentPages: number;
  endReason: string | null;
  cancelAction: string;
  exportHref: string;
}

const TRANSCRIPT_EXTENSIONS: Record<string, string> = { json: 'json', text: 'txt', srt: 'srt', vtt: 'vtt' };
const LISTED = 100;

export function pageHandlers(deps: PageDeps, prices: { transcript: Price }) {
  const { tollgate } = deps;
  const usageOf = (accountId: string) => tollgate.usage(accountId, { surface: 'web' });
  const base = (request: ApiRequest, title: string, nav: PageData['nav']): PageData => ({
    title,
    nav,
    signedIn: true,
    csrfField: CSRF_FIELD,
    csrf: expectedToken(request, 'session') ?? '',
  });

  /** The account's holds of one kind (or both), newest first, as the pages show them. */
  async function jobViews(accountId: string, kind?: Hold['kind']): Promise<{ views: JobView[]; active: number }> {
    const listed = await tollgate.holds.list(accountId, { limit: LISTED });
    const holds = listed.holds.filter((hold) => kind === undefined || hold.kind === kind);
    return { views: await Promise.all(holds.map((hold) => viewOf(hold))), active: listed.active };
  }

  async function viewOf(hold: Hold): Promise<JobView> {
    if (hold.kind === 'items') {
      const body = jobBody(hold);
      const failed = body.failed.video_unavailable + body.failed.no_captions;
      return {
        id: body.id,
        kind: 'bulk',
        href: `/bulk#${body.id}`,
        json: `/jobs/${body.id}`,
        status: body.status,
        open: hold.status === 'open',
        done: body.delivered + failed,
        total: body.videos,
        unit: 'videos',
        reserved: body.reserved,
        spent: body.spent,
        refunded: body.refunded,
        refundedToEndedCycle: body.refunded_to_ended_cycle,
        createdAt: format.instant(hold.createdAt),
        finishedAt: hold.endedAt === null ? null : format.instant(hold.endedAt),
        videoId: null,
        includeComments: body.include_comments,
        delivered: body.delivered,
        failed,
        commentPages: body.comment_pages,
        endReason: null,
        cancelAction: `/bulk/${body.id}/cancel`,
        exportHref: `/bulk/${body.id}/export`,
      };
    }
    const videoId = (await deps.store.meta(hold.id))?.videoId ?? null;
    const body = collectionBody(hold, videoId);
    return {
      id: body.id,
      kind: 'collection',
      href: `/collections/${body.id}`,
      json: `/web/collections/${body.id}`,
      status: body.status,
      open: hold.status === 'open',
      done: body.spent,
      total: body.limit,
      unit: 'credits',
      reserved: body.reserved,
      spent: body.spent,
      refunded: body.refunded,
      refundedToEndedCycle: body.refunded_to_ended_cycle,
      createdAt: format.instant(hold.createdAt),
      finishedAt: hold.endedAt === null ? null : format.instant(hold.endedAt),
      videoId,
      includeComments: true,
      delivered: body.comment_pages,
      failed: 0,
      commentPages: body.comment_pages,
      endReason: body.end_reason,
      cancelAction: `/collections/${body.id}/cancel`,
      exportHref: `/collections/${body.id}/export`,
    };
  }

  const dashboard: AuthedHandler = async (request, call) => {
    const accountId = call.caller.accountId;
    const [usage, jobs, grants] = await Promise.all([usageOf(accountId), jobViews(accountId), tollgate.credits.grants(accountId)]);
    const [history, fired] = await Promise.all([
      tollgate.credits.history(accountId, { days: historyDays(usage.cycle, usage.now, deps.historyKeptDays) }),
      deps.lowBalance.fired(accountId, usage.cycle.id),
    ]);
    const active = jobs.views.filter((job) => job.open);
    return render('dashboard', {
      ...base(request, 'Dashboard', 'dashboard'),
      accountId,
      ...usageView(usage),
      sources: sourceViews(grants),
      lowBalance: lowBalanceView(fired, usage),
      chart: spendChart(history, usage.cycle, usage.now),
      active,
      recent: jobs.views.filter((job) => !job.open).slice(0, 5),
      poll: active.length > 0 ? `/jobs?limit=${LISTED}` : undefined,
      refreshWithoutScript: active.length > 0,
    });
  };

  const transcriptForm: AuthedHandler = async (request, call) => {
    const usage = await usageOf(call.caller.accountId);
    return render('transcripts', {
      ...base(request, 'Transcripts', 'transcripts'),
      ...usageView(usage),
      formats: TRANSCRIPT_FORMATS,
      price: prices.transcript.credits,
    });
  };

  /** POST /transcripts: the transcript route's own handler (order and charge; docs/example-service.md#transcripts-and-comments), then a redirect to what was paid for. */
  const fetchTranscript: AuthedHandler = async (request, call) => {
    const fields = formFields(request);
    const videoId = (fields.video_id ?? '').trim();
    const reply = await deps.transcript({ ...request, params: { id: videoId }, query: { format: fields.format } }, call);
    if (reply.status !== 200) return reply;
    const format = fields.format ?? 'json';
    const id = await deps.receipts.save(call.caller.accountId, {
      videoId,
      format,
      contentType: reply.headers['Content-Type'] ?? 'application/json',
      body: typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body, null, 2),
      charged: Number(reply.headers['X-Credits-Charged'] ?? call.price.credits),
      at: Date.now(),
    });
    return redirect(`/transcripts/${id}`, { 'X-Credits-Charged': reply.headers['X-Credits-Charged'] ?? '' });
  };

  const receiptOf = async (request: ApiRequest, accountId: string): Promise<{ missing: HttpReply } | { id: string; receipt: Receipt }> => {
    const id = request.params.id ?? '';
    const receipt = await deps.receipts.get(accountId, id);
    return receipt === null ? { missing: fail(request, 'not_found', MESSAGES.noTranscript(id)) } : { id, receipt };
  };

  const transcriptPage: AuthedHandler = async (request, call) => {
    const found = await receiptOf(request, call.caller.accountId);
    if ('missing' in found) return found.missing;
    const usage = await usageOf(call.caller.accountId);
    return render('transcript', {
      ...base(request, `Transcript of ${found.receipt.videoId}`, 'transcripts'),
      ...usageView(usage),
      receipt: found.receipt,
      fetchedAt: format.instant(found.receipt.at),
      download: `/transcripts/${found.id}/download`,
    });
  };

  const transcriptDownload: AuthedHandler = async (request, call) => {
    const found = await receiptOf(request, call.caller.accountId);
    if ('missing' in found) return found.missing;
    const { receipt } = found;
    const filename = `${receipt.videoId}.${TRANSCRIPT_EXTENSIONS[receipt.format] ?? 'txt'}`;
    return download(receipt.contentType, filename, receipt.body);
  };

  const collections: AuthedHandler = async (request, call) => {
    const accountId = call.caller.accountId;
    const [usage, jobs] = await Promise.all([usageOf(accountId), jobViews(accountId, 'budget')]);
    const open = jobs.views.filter((job) => job.open);
    return render('collections', {
      ...base(request, 'Comments collections', 'collections'),
      ...usageView(usage),
      collections: jobs.views,
      bounds: {
        min: COLLECTION_LIMIT.min,
        max: Math.max(COLLECTION_LIMIT.min, Math.min(COLLECTION_LIMIT.max, usage.credits.balance)),
        top: COLLECTION_LIMIT.max,
      },
      poll: open.length > 0 ? `/jobs?limit=${LISTED}` : undefined,
      refreshWithoutScript: open.length > 0,
    });
  };

  /** POST /collections: the JSON route's handler (bounds, hold, cap; docs/example-service.md#bulk-jobs), with the form's fields. */
  const createCollection: AuthedHandler = async (request, call) => {
    const fields = formFields(request);
    const limit = /^\s*\d{1,9}\s*$/.test(fields.limit ?? '') ? Number(fields.limit) : (fields.limit ?? null);
    const reply = await deps.createCollection({ ...request, body: { video_id: (fields.video_id ?? '').trim(), limit } }, call);
    if (reply.status !== 201) return reply;
    return redirect(`/collections/${(reply.body as { id: string }).id}`);
  };

  const collection: AuthedHandler = async (request, call) => {
    const hold = await tollgate.holds.get(call.caller.accountId, request.params.id ?? '');
    if (hold.kind !== 'budget') return fail(request, 'not_found', MESSAGES.noJob(hold.id));
    const view = await viewOf(hold);
    return render('collection', {
      ...base(request, `Collection of ${view.videoId ?? hold.id}`, 'collections'),
      job: view,
      poll: view.open ? view.json : undefined,
      refreshWithoutScript: view.open,
    });
  };

  const bulk: AuthedHandler = async (request, call) => {
    const accountId = call.caller.accountId;
    const [usage, jobs] = await Promise.all([usageOf(accountId), jobViews(accountId, 'items')]);
    const open = jobs.views.filter((job) => job.open);
    return render('bulk', {
      ...base(request, 'Bulk jobs', 'bulk'),
      ...usageView(usage),
      list: jobs.views,
      // One key per rendered form: sending it twice (a double click, a reload) creates one job.
      idempotencyKey: `web-${randomUUID()}`,
      poll: open.length > 0 ? `/jobs?limit=${LISTED}` : undefined,
      refreshWithoutScript: open.length > 0,
    });
  };

  /** POST /bulk: POST /jobs itself (schema, plan, Idempotency-Key, reservation), with the form's fields. */
  const createBulk: AuthedHandler = async (request, call) => {
    const fields = formFields(request);
    const words = (fields.ids ?? '').split(/[\s,]+/).filter((word) => word !== '');
    const source = fields.source === 'channel_id' || fields.source === 'playlist_id' ? fields.source : 'video_ids';
    const body: Record<string, unknown> = source === 'video_ids' ? { video_ids: words } : { [source]: words.length === 1 ? words[0] : words.join(' ') };
    if (fields.include_comments === 'on') body.include_comments = true;
    const key = fields.idempotency_key;
    const headers = { ...request.headers, 'idempotency-key': key === undefined || key === '' ? undefined : key };
    const reply = await deps.createJob({ ...request, body, headers }, call);
    if (reply.status !== 201) return reply;
    return redirect(`/bulk#${(reply.body as { id: string }).id}`);
  };

  /** Cancel from a form: DELETE /jobs/:id's own handler (refunds once), then back to where the user was. */
  const cancel =
    (back: (id: string) => string): AuthedHandler =>
    async (request, call) => {
      const reply = await deps.cancelJob(request, call);
      return reply.status === 200 ? redirect(back(request.params.id ?? '')) : reply;
    };

  /** Every saved result of a job or collection as one JSON file; spends no credit (docs/example-service.md#bulk-jobs). */
  const exportJob: AuthedHandler = async (request, call) => {
    const hold = await tollgate.holds.get(call.caller.accountId, request.params.id ?? '');
    const results: unknown[] = [];
    for (let offset = 0; ; ) {
      const page = await deps.store.results(hold.id, offset, 1000);
      results.push(...page.items);
      offset += page.items.length;
      if (page.items.length === 0 || offset >= page.total) break;
    }
    const view = await viewOf(hold);
    const job = hold.kind === 'items' ? jobBody(hold) : collectionBody(hold, view.videoId);
    return download('application/json', `${hold.id}.json`, JSON.stringify({ job, results }, null, 2));
  };

  return {
    dashboard,
    transcriptForm,
    fetchTranscript,
    transcriptPage,
    transcriptDownload,
    collections,
    createCollection,
    collection,
    cancelCollection: cancel((id) => `/collections/${id}`),
    bulk,
    createBulk,
    cancelBulk: cancel((id) => `/bulk#${id}`),
    exportJob,
  };
}

/** What the pages show of an account's usage on `web`. */
function usageView(usage: Usage) {
  const { credits, cycle, rateLimit } = usage;
  const allowance = Math.max(1, credits.allowance);
  // One stacked bar for balance + spent + held == allowance (docs/accounts.md#billing-cycles).
  let x = 0;
  const segment = (name: string, value: number) => {
    const width = (value / allowance) * 100;
    const part = { name, value, x: Math.round(x * 100) / 100, width: Math.round(width * 100) / 100 };
    x += width;
    return part;
  };
  return {
    plan: usage.plan,
    credits,
    meter: [segment('spent', credits.spent), segment('held', credits.held), segment('balance', credits.balance)],
    cycle: {
      id: cycle.id,
      start: format.day(cycle.start),
      end: format.day(cycle.end),
      daysLeft: format.daysLeft(usage.now, cycle.end),
      elapsed: format.percent(usage.now - cycle.start, cycle.end - cycle.start),
    },
    budget: { limit: rateLimit.limit, remaining: rateLimit.remaining, resetSeconds: Math.max(0, Math.ceil(rateLimit.resetMs / 1000)) },
    jobs: { active: usage.holds.active, cap: usage.holds.cap },
  };
}

const SOURCE_LABELS: Record<Grant['kind'], string> = {
  plan: 'Plan allowance',
  paid: 'Paid credits',
  promotional: 'Promotional credits',
  adjustment: 'Adjustment',
};

/**
 * The account's sources of credits as the dashboard lists them: in the order they are spent
 * (api/bodies.ts spendOrder), numbered while live; pending ones after, by when they start.
 */
function sourceViews(grants: readonly Grant[]) {
  let order = 0;
  return spendOrder(grants).map((grant) => {
    const live = grant.status === 'active' || grant.status === 'used';
    const cycle = grant.kind === 'plan' ? ` (cycle ${grant.grantId.slice('cycle:'.length)})` : '';
    return {
      grantId: grant.grantId,
      order: live ? ++order : null,
      label: `${SOURCE_LABELS[grant.kind]}${cycle}`,
      reason: grant.reason,
      remaining: grant.remaining,
      amount: grant.amount,
      held: grant.held,
      status: grant.status,
      expires:
        grant.status === 'pending'
          ? `starts ${format.day(grant.effectiveAt)}${grant.expiresAt === null ? '' : `, expires ${format.day(grant.expiresAt)}`}`
          : grant.expiresAt === null
            ? 'never'
            : format.day(grant.expiresAt),
    };
  });
}

/** The dashboard's notice once a threshold fired this cycle: what was crossed, the lowest first, and when. */
function lowBalanceView(fired: FiredThreshold[], usage: Usage) {
  if (fired.length === 0) return undefined;
  const crossed = fired.map(({ threshold, at }) => ({
    what:
      'below' in threshold
        ? `your balance fell to ${format.count(threshold.below, 'credit')} or fewer`
        : `${threshold.usedPercent}% of this cycle's credits were used`,
    on: format.day(at),
  }));
  return { crossed, balance: usage.credits.balance, renews: format.day(usage.cycle.end) };
}

function download(contentType: string, filename: string, body: string): HttpReply {
  return {
    status: 200,
    headers: {
      'Content-Type': contentType,
      'Content-Disposition': `attachment; filename="${filename}"`,
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'no-store',
    },
    body,
  };
}
