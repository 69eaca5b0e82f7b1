/**
 * The back office's credit routes (docs/example-service.md#credits-grants-and-refunds), on
 * tollgate's credits: grant credits (a top-up pack, a promotion that expires), void a grant (a
 * chargeback), adjust by +n or -n (support's correction), refund a charge named by the request
 * id its reply carried (`X-Request-Id`: every charge's operation id is its request's id,
 * api/charge.ts), and list an account's sources of credits in spend order.
 *
 * Every movement takes an `operation_id`; without one it is this admin request's own id, and
 * either way it is answered back, so a caller that lost the reply retries with it and the
 * movement applies once. Fields are checked here, in the API's snake_case and with `param`
 * naming the field; an unknown field is refused (a mistyped `expires_at` must not make a
 * promotion that never expires). The library checks the rest (ranges, an expiry after now)
 * and its InvalidInputError is a 400 too.
 */
import type { CreditSource, Tollgate } from 'tollgate';
import { insufficientReply } from 'tollgate/http';
import { grantBody, spendOrder } from './bodies.ts';
import { adminGuard, instant, type AdminDeps } from './admin.ts';
import { fail, json, type ApiRequest, type HttpReply } from '../http/handler.ts';
import { MESSAGES } from '../http/messages.ts';

/** How long a charge stays refundable by its request id: tollgate's operationTtlMs (service.ts). */
export const REFUNDABLE_FOR_MS = 30 * 86_400_000;

const GRANT_KINDS = ['paid', 'promotional', 'adjustment'] as const;
/** The highest priority tollgate takes (lower is spent first). */
const MAX_PRIORITY = 1000;
/** The longest reason tollgate keeps. */
const MAX_REASON = 200;

/** A field the body got wrong: answered 400 invalid_request with `param`. */
class BadField extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}

/** The body's fields, after refusing any field the route does not take. */
function fieldsOf(body: Record<string, unknown>, allowed: readonly string[]): Record<string, unknown> {
  const unknown = Object.keys(body).find((field) => !allowed.includes(field));
  if (unknown !== undefined) throw new BadField(unknown, MESSAGES.unknownField(unknown));
  return body;
}

function whole(value: unknown, param: string, message: string, test: (n: number) => boolean): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || !test(value)) throw new BadField(param, message);
  return value;
}

function optionalInstant(value: unknown, param: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = instant(value);
  if (ms === null) throw new BadField(param, MESSAGES.instantField(param));
  return ms;
}

function reasonOf(value: unknown, required: boolean): string | undefined {
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value.length > MAX_REASON || (required && value.trim() === '')) {
    throw new BadField('reason', required ? MESSAGES.reasonRequired(MAX_REASON) : MESSAGES.reason(MAX_REASON));
  }
  return value;
}

/** The movement's operation id: the caller's, or this request's id. */
function operationIdOf(request: ApiRequest, value: unknown): string {
  if (value === undefined) return request.requestId;
  if (typeof value !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(value)) throw new BadField('operation_id', MESSAGES.operationId);
  return value;
}

const sourcesBody = (sources: readonly CreditSource[]) => sources.map((source) => ({ grant_id: source.grantId, amount: source.amount }));

export function creditHandlers(deps: Pick<AdminDeps, 'tollgate' | 'failedAuth' | 'adminToken'>) {
  const tollgate: Tollgate = deps.tollgate;
  const guard = adminGuard(deps);
  const admin = (handler: (request: ApiRequest, body: Record<string, unknown>, accountId: string) => Promise<HttpReply>) =>
    guard(async (request, body) => {
      try {
        return await handler(request, body, request.params.id ?? '');
      } catch (error) {
        if (error instanceof BadField) return fail(request, 'invalid_request', error.message, { extra: { param: error.param } });
        throw error;
      }
    });

  /** POST /admin/accounts/:id/grants {amount, kind?, priority?, effective_at?, expires_at?, reason?, operation_id?} */
  const grant = admin(async (request, body, accountId) => {
    const fields = fieldsOf(body, ['amount', 'kind', 'priority', 'effective_at', 'expires_at', 'reason', 'operation_id']);
    const amount = whole(fields.amount, 'amount', MESSAGES.grantAmount, (n) => n >= 1);
    const kind = fields.kind ?? 'paid';
    if (!GRANT_KINDS.includes(kind as (typeof GRANT_KINDS)[number])) throw new BadField('kind', MESSAGES.grantKind);
    const priority =
      fields.priority === undefined ? undefined : whole(fields.priority, 'priority', MESSAGES.priority(MAX_PRIORITY), (n) => n >= 0 && n <= MAX_PRIORITY);
    const effectiveAt = optionalInstant(fields.effective_at, 'effective_at');
    const expiresAt = optionalInstant(fields.expires_at, 'expires_at');
    if (expiresAt !== undefined && effectiveAt !== undefined && expiresAt <= effectiveAt) throw new BadField('expires_at', MESSAGES.expiresAfter);
    const reason = reasonOf(fields.reason, false);
    const operationId = operationIdOf(request, fields.operation_id);
    const outcome = await tollgate.credits.grant(accountId, {
      amount,
      kind: kind as (typeof GRANT_KINDS)[number],
      ...(priority === undefined ? {} : { priority }),
      ...(effectiveAt === undefined ? {} : { effectiveAt }),
      ...(expiresAt === undefined ? {} : { expiresAt }),
      ...(reason === undefined ? {} : { reason }),
      operationId,
    });
    if (!outcome.ok) return fail(request, 'grant_limit_reached', MESSAGES.grantLimit);
    const listed = await tollgate.credits.grants(accountId, { ended: true });
    const granted = listed.find((source) => source.grantId === outcome.grantId);
    return json(201, {
      account_id: accountId,
      grant_id: outcome.grantId,
      operation_id: operationId,
      replayed: outcome.replayed,
      grant: granted === undefined ? null : grantBody(granted),
    });
  });

  /** POST /admin/accounts/:id/grants/:grant_id/void {reason?, operation_id?} */
  const voidGrant = admin(async (request, body, accountId) => {
    const fields = fieldsOf(body, ['reason', 'operation_id']);
    const reason = reasonOf(fields.reason, false);
    const operationId = operationIdOf(request, fields.operation_id);
    const grantId = request.params.grant_id ?? '';
    const outcome = await tollgate.credits.voidGrant(accountId, grantId, { ...(reason === undefined ? {} : { reason }), operationId });
    return json(200, { account_id: accountId, grant_id: grantId, operation_id: operationId, voided: outcome.voided, replayed: outcome.replayed });
  });

  /** POST /admin/accounts/:id/adjustments {amount, reason, operation_id?}: +n adds an adjustment grant, -n takes n in spend order. */
  const adjust = admin(async (request, body, accountId) => {
    const fields = fieldsOf(body, ['amount', 'reason', 'operation_id']);
    const amount = whole(fields.amount, 'amount', MESSAGES.adjustAmount, (n) => n !== 0);
    const reason = reasonOf(fields.reason, true)!;
    const operationId = operationIdOf(request, fields.operation_id);
    const outcome = await tollgate.credits.adjust(accountId, { amount, reason, operationId });
    if (!outcome.ok) return insufficientReply(outcome.available, outcome.needed, request.requestId);
    return json(200, {
      account_id: accountId,
      amount: outcome.amount,
      grant_id: outcome.grantId,
      sources: sourcesBody(outcome.sources),
      available: outcome.available,
      operation_id: operationId,
      replayed: outcome.replayed,
    });
  });

  /**
   * POST /admin/accounts/:id/refunds {request_id, amount?, reason?, operation_id?}: all (no
   * amount) or part of the charge the request made, back to the sources that paid it.
   */
  const refund = admin(async (request, body, accountId) => {
    const fields = fieldsOf(body, ['request_id', 'amount', 'reason', 'operation_id']);
    const charge = fields.request_id;
    if (typeof charge !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(charge)) throw new BadField('request_id', MESSAGES.refundRequestId);
    const amount = fields.amount === undefined ? undefined : whole(fields.amount, 'amount', MESSAGES.refundAmount, (n) => n >= 1);
    const reason = reasonOf(fields.reason, false);
    const operationId = operationIdOf(request, fields.operation_id);
    const outcome = await tollgate.credits.refund(accountId, {
      charge,
      ...(amount === undefined ? {} : { amount }),
      ...(reason === undefined ? {} : { reason }),
      operationId,
    });
    if (!outcome.ok) {
      return outcome.reason === 'unknown_charge'
        ? fail(request, 'not_found', MESSAGES.unknownCharge(charge, REFUNDABLE_FOR_MS / 86_400_000), { extra: { param: 'request_id' } })
        : fail(request, 'exceeds_charge', MESSAGES.exceedsCharge(charge), { extra: { param: 'amount' } });
    }
    return json(200, {
      account_id: accountId,
      request_id: charge,
      refunded: outcome.refunded,
      sources: sourcesBody(outcome.sources),
      operation_id: operationId,
      replayed: outcome.replayed,
    });
  });

  /** GET /admin/accounts/:id/grants?ended=true: the sources in spend order (pending ones next, then, with ended, the ended ones). */
  const list = admin(async (request, _body, accountId) => {
    const ended = request.query.ended;
    if (ended !== undefined && ended !== 'true' && ended !== 'false') throw new BadField('ended', MESSAGES.endedFlag);
    const grants = await tollgate.credits.grants(accountId, { ended: ended === 'true' });
    return json(200, { account_id: accountId, grants: spendOrder(grants).map(grantBody) });
  });

  return { grant, voidGrant, adjust, refund, list };
}
