// Grants' rules (docs/grants.md): the sources credits are drawn from, their spend order, and
// the checks and outcomes of grant, voidGrant, adjust and refund. Shared by the tollgate on
// Redis, tollgate/model and the memory tollgate; no Redis here.
import { InvalidInputError } from '../errors.ts';
import { count, instant, MAX_ALLOWANCE, oneOf, printableKey } from './validate.ts';

/** paid: bought credits (a top-up pack); promotional: given away; adjustment: a support correction. */
export type GrantKind = 'paid' | 'promotional' | 'adjustment';
/** A source's kind: a grant's, or "plan" for the current cycle's allowance. */
export type SourceKind = GrantKind | 'plan';
/**
 * pending: before effectiveAt; active: live with credits left; used: live with none left;
 * expired: past expiresAt (or an ended cycle); voided: ended by voidGrant.
 */
export type GrantStatus = 'pending' | 'active' | 'used' | 'expired' | 'voided';

/** The grant kinds, in the order a tie on priority and expiry spends them (the plan between). */
export const GRANT_KINDS: readonly GrantKind[] = ['paid', 'promotional', 'adjustment'];

/** Spend order of the kinds on a tie of priority and expiry: promotional, plan, adjustment, paid. */
export const KIND_RANK: Record<SourceKind, number> = { promotional: 0, plan: 1, adjustment: 2, paid: 3 };

/** A grant's default priority; the cycle's allowance has this priority too. */
export const DEFAULT_PRIORITY = 50;
/** The highest priority a grant may have (lower numbers are spent first). */
export const MAX_PRIORITY = 1000;
/** Live or pending grants a subject may have: the default, and the most createTollgate's `grants.max` allows. */
export const DEFAULT_GRANTS_MAX = 16;
export const MAX_GRANTS_MAX = 64;
/** Ended grants kept per subject (listed with `{ ended: true }`); older ones are dropped. */
export const ENDED_GRANTS_KEPT = 100;
/** The longest reason kept on a grant, an adjustment, a void or a refund. */
export const MAX_REASON_LENGTH = 200;

/** Where credits came from, and how many: a grant's id, or `cycle:<n>` for a cycle's allowance. */
export interface CreditSource {
  /** `g<n>` for a grant, `cycle:<n>` for a cycle's allowance. */
  grantId: string;
  /** Credits this source gave (or got back). */
  amount: number;
}

/** credits.grant's request. */
export interface GrantRequest {
  /** Credits granted, at least 1. */
  amount: number;
  /** paid (default), promotional or adjustment. */
  kind?: GrantKind;
  /** Lower is spent first; default 50, as the cycle's allowance. 0..1000. */
  priority?: number;
  /** When it starts to count (Date or ms); default now. */
  effectiveAt?: Date | number;
  /** When what is left expires (Date or ms), after effectiveAt; default never. */
  expiresAt?: Date | number;
  /** Why, for support and finance (at most 200 characters). */
  reason?: string;
  /** Required: the same id with the same terms answers the first grant again (`replayed`). */
  operationId: string;
}

/** credits.grant's outcome: the grant's id, or refused because the subject has `grants.max` live or pending grants. */
export type GrantOutcome = { ok: true; grantId: string; replayed: boolean } | { ok: false; reason: 'grant_limit_reached' };

/** credits.voidGrant's options. */
export interface VoidGrantOptions {
  /** Why (at most 200 characters). */
  reason?: string;
  /** Required: the same id answers the first void again. */
  operationId: string;
}

/** credits.voidGrant's outcome: `voided` credits that were left (held ones are voided as they are refunded). */
export interface VoidOutcome {
  /** Always true: a void is not refused (an unknown grant throws GrantNotFoundError). */
  ok: true;
  /** Credits the grant had left and lost now; 0 when it had already ended. */
  voided: number;
  /** This operation id voided before: the first answer again, nothing changed now. */
  replayed: boolean;
}

/** credits.adjust's request: +n adds an adjustment grant without expiry; -n takes n in spend order. */
export interface AdjustRequest {
  /** A whole number other than 0. */
  amount: number;
  /** Why (required, at most 200 characters). */
  reason: string;
  /** Required: the same id with the same amount answers the first adjustment again. */
  operationId: string;
}

/**
 * credits.adjust's outcome: `amount` as asked; `sources` the grant added (+n) or the sources
 * debited (-n); refused whole when less than n is available.
 */
export type AdjustOutcome =
  | { ok: true; amount: number; grantId: string | null; sources: CreditSource[]; available: number; replayed: boolean }
  | { ok: false; reason: 'insufficient'; available: number; needed: number };

/** credits.refund's request: all or part of an earlier charge, named by its operation id. */
export interface RefundRequest {
  /** The operation id the charge was made with. */
  charge: string;
  /** Credits to return; default what is left to refund of the charge. */
  amount?: number;
  /** Why (at most 200 characters). */
  reason?: string;
  /** Required: the same id with the same terms answers the first refund again. */
  operationId: string;
}

/** credits.refund's outcome: what went back, to which sources; refused when the charge is unknown or the amount is more than is left of it. */
export type RefundOutcome =
  | { ok: true; refunded: number; sources: CreditSource[]; replayed: boolean }
  | { ok: false; reason: 'unknown_charge' | 'exceeds_charge' };

/** credits.grants' options: `ended: true` adds expired and voided grants and ended cycles. */
export interface ListGrantsOptions {
  /** Add the ended grants and cycles (newest first). Default false. */
  ended?: boolean;
}

/** A source of credits as credits.grants lists it: a grant, or a cycle's allowance (`cycle:<n>`, kind "plan"). */
export interface Grant {
  /** `g<n>`, or `cycle:<n>` for a cycle's allowance. */
  grantId: string;
  /** paid, promotional, adjustment; plan for a cycle. */
  kind: SourceKind;
  /** Lower is spent first (docs/grants.md#spend-order); a cycle has 50. */
  priority: number;
  /** Credits granted. remaining + spent + held + expired + voided + refundedAfterEnd == amount. */
  amount: number;
  /** Credits left to spend (0 once ended). */
  remaining: number;
  /** Credits charged or settled from it (less what credits.refund gave back). */
  spent: number;
  /** Credits open holds reserved from it. */
  held: number;
  /** Left when it expired (an ended cycle: unused). */
  expired: number;
  /** Left when it was voided, and held credits refunded after that. */
  voided: number;
  /** Refunded after it ended (an ended cycle: refunded); raised no balance. */
  refundedAfterEnd: number;
  /** When it starts to count (ms); a cycle: its start. */
  effectiveAt: number;
  /** null: never expires. A cycle: its end. */
  expiresAt: number | null;
  /** When it was granted (ms); a cycle: its start. */
  createdAt: number;
  /** null while live. */
  endedAt: number | null;
  /** pending, active, used, expired or voided. */
  status: GrantStatus;
  /** The reason given with the grant; null without one (and for a cycle). */
  reason: string | null;
}

/** createTollgate's `grants` option. */
export interface GrantsOptions {
  /** Live or pending grants per subject, 1..64; default 16. */
  max?: number;
}

/** The checked `grants.max`. */
export function grantsMax(options: GrantsOptions | undefined): number {
  return count('grants.max', options?.max ?? DEFAULT_GRANTS_MAX, 1, MAX_GRANTS_MAX);
}

/** The grant id of cycle n's allowance. */
export function cycleGrantId(cycle: number): string {
  return `cycle:${cycle}`;
}

/** The grant id of the subject's n-th grant. */
export function grantIdOf(n: number): string {
  return `g${n}`;
}

/** A checked grant id: `g<n>` or `cycle:<n>`. */
export function grantIdArg(value: unknown): { cycle: number } | { grant: number } {
  const match = typeof value === 'string' ? /^(?:g|cycle:)([1-9][0-9]{0,14})$/.exec(value) : null;
  if (!match) throw new InvalidInputError(`Grant id must be g<n> or cycle:<n> (got ${JSON.stringify(value)})`);
  const n = Number(match[1]);
  return (value as string).startsWith('g') ? { grant: n } : { cycle: n };
}

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** An optional reason: at most 200 characters, no control characters. */
export function reasonArg(value: unknown, required = false): string {
  if (value === undefined && !required) return '';
  if (typeof value !== 'string' || value.length > MAX_REASON_LENGTH || (required && value.length === 0) || hasControlCharacter(value)) {
    throw new InvalidInputError(`Reason must be ${required ? '1' : '0'}-${MAX_REASON_LENGTH} characters without control characters`);
  }
  return value;
}

/** A checked grant request, its instants resolved against now. */
export function grantArgs(request: GrantRequest, now: number) {
  if (request === null || typeof request !== 'object') throw new InvalidInputError('A grant needs { amount, operationId }');
  const amount = count('amount', request.amount, 1, MAX_ALLOWANCE);
  const kind = oneOf('kind', request.kind ?? 'paid', GRANT_KINDS);
  const priority = count('priority', request.priority ?? DEFAULT_PRIORITY, 0, MAX_PRIORITY);
  const effectiveAt = request.effectiveAt === undefined ? now : instant('effectiveAt', request.effectiveAt);
  const expiresAt = request.expiresAt === undefined ? null : instant('expiresAt', request.expiresAt);
  if (expiresAt !== null && expiresAt <= Math.max(effectiveAt, now)) throw expiryNotAfterStart();
  const reason = reasonArg(request.reason);
  const operationId = printableKey('Operation id', request.operationId);
  return { amount, kind, priority, effectiveAt, expiresAt, reason, operationId };
}

/**
 * A grant that would end before it starts: refused here with the caller's clock, and again by
 * the grant script with the store's (docs/grants.md#grant-void-adjust-refund).
 */
export function expiryNotAfterStart(): InvalidInputError {
  return new InvalidInputError('expiresAt must be after effectiveAt and after now');
}

/** Checked voidGrant arguments: a grant's number (a cycle's allowance cannot be voided), the reason and the operation id. */
export function voidArgs(grantId: unknown, options: VoidGrantOptions) {
  const which = grantIdArg(grantId);
  if ('cycle' in which) throw new InvalidInputError(`A cycle's allowance cannot be voided (got ${JSON.stringify(grantId)})`);
  if (options === null || typeof options !== 'object') throw new InvalidInputError('A void needs { operationId }');
  const reason = reasonArg(options.reason);
  return { grant: which.grant, reason, operationId: printableKey('Operation id', options.operationId) };
}

/** adjust +n when the subject has `max` live or pending grants and none can be archived (docs/grants.md#bounds). */
export function grantLimitReached(amount: number, max: number): InvalidInputError {
  return new InvalidInputError(`An adjustment of +${amount} needs a grant: grant limit reached (${max} live or pending grants)`);
}

/** A checked adjustment. */
export function adjustArgs(request: AdjustRequest) {
  if (request === null || typeof request !== 'object') throw new InvalidInputError('An adjustment needs { amount, reason, operationId }');
  const amount = request.amount;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount === 0 || Math.abs(amount) > MAX_ALLOWANCE) {
    throw new InvalidInputError(`amount must be a whole number other than 0, at most ${MAX_ALLOWANCE} either way (got ${String(amount)})`);
  }
  return { amount, reason: reasonArg(request.reason, true), operationId: printableKey('Operation id', request.operationId) };
}

/** A checked refund; amount 0 means what is left of the charge. */
export function refundArgs(request: RefundRequest) {
  if (request === null || typeof request !== 'object') throw new InvalidInputError('A refund needs { charge, operationId }');
  const charge = printableKey('Charge operation id', request.charge);
  const amount = request.amount === undefined ? 0 : count('amount', request.amount, 1, MAX_ALLOWANCE);
  return { charge, amount, reason: reasonArg(request.reason), operationId: printableKey('Operation id', request.operationId) };
}

/** What orders sources for spending (docs/grants.md#spend-order). */
export interface Orderable {
  /** A tie on priority and expiry spends promotional, plan, adjustment, paid in that order. */
  kind: SourceKind;
  /** Lower is spent first. */
  priority: number;
  /** When it started to count (ms). */
  effectiveAt: number;
  /** Soonest first; null (never) last. */
  expiresAt: number | null;
  /** When it was made (ms). */
  createdAt: number;
  /** The cycle 0, a grant its number: creation ties are broken by it. */
  seq: number;
}

/**
 * The spend order, one rule (lua/lib/grants.lua keeps the same): priority ascending; then
 * expiry soonest (none last); then promotional, plan, adjustment, paid; then effectiveAt;
 * then creation.
 */
export function compareSources(a: Orderable, b: Orderable): number {
  return (
    a.priority - b.priority ||
    (a.expiresAt ?? Number.MAX_SAFE_INTEGER) - (b.expiresAt ?? Number.MAX_SAFE_INTEGER) ||
    KIND_RANK[a.kind] - KIND_RANK[b.kind] ||
    a.effectiveAt - b.effectiveAt ||
    a.createdAt - b.createdAt ||
    a.seq - b.seq
  );
}

/**
 * The part of a draw list (sources in draw order) at positions [from, from + n) counted from
 * the front: what a hold's spend uses (docs/grants.md#holds). Only sources with a part > 0.
 */
export function frontSlice(sources: readonly CreditSource[], from: number, n: number): CreditSource[] {
  const out: CreditSource[] = [];
  let start = 0;
  for (const s of sources) {
    const lo = Math.max(start, from);
    const hi = Math.min(start + s.amount, from + n);
    if (hi > lo) out.push({ grantId: s.grantId, amount: hi - lo });
    start += s.amount;
  }
  return out;
}

/**
 * The part of a draw list at positions [from, from + n) counted from the end, last drawn
 * first: what a refund returns (a hold's, or credits.refund's of a charge).
 */
export function backSlice(sources: readonly CreditSource[], from: number, n: number): CreditSource[] {
  return frontSlice([...sources].reverse(), from, n);
}

/** Per source of a hold's draw list: what it spent (from the front), refunded (from the end) and still holds. */
export function holdParts(
  sources: readonly CreditSource[],
  spent: number,
  refunded: number,
): Array<{ grantId: string; spent: number; refunded: number; held: number }> {
  const total = sources.reduce((sum, s) => sum + s.amount, 0);
  let start = 0;
  return sources.map((s) => {
    const end = start + s.amount;
    const usedFront = Math.max(0, Math.min(end, spent) - start);
    // Positions from the end: this source covers [total - end, total - start).
    const usedBack = Math.max(0, Math.min(total - start, refunded) - (total - end));
    start = end;
    return { grantId: s.grantId, spent: usedFront, refunded: usedBack, held: s.amount - usedFront - usedBack };
  });
}
