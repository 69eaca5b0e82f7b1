/**
 * Credit sources in the reference model (docs/grants.md): the current cycle's allowance and
 * the subject's grants, kept in spend order; debits draw from them in that order, holds
 * spend from the front of what they drew and refund from its end, and time activates and
 * expires grants (docs/grants.md#rolls). The calls (credits.grant, voidGrant, grants, adjust,
 * refund) are in credits.ts.
 */
import {
  backSlice,
  compareSources,
  cycleGrantId,
  DEFAULT_PRIORITY,
  ENDED_GRANTS_KEPT,
  frontSlice,
  grantIdOf,
  type CreditSource,
  type Grant,
  type GrantKind,
  type Orderable,
} from '../rules/grants.ts';
import type { AccountCredits } from '../rules/records.ts';
import type { ModelAccount, ModelGrant, ModelGrantState } from './core.ts';

const CYCLE_ONLY: ReadonlyArray<ModelGrant | null> = [null];

/** The current cycle as a source to order. */
function cycleOrderable(a: ModelAccount): Orderable {
  return { kind: 'plan', priority: DEFAULT_PRIORITY, effectiveAt: a.cycleStart, expiresAt: a.cycleEnd, createdAt: a.cycleStart, seq: 0 };
}

/** The account's grants, made on first use. */
export function grantState(a: ModelAccount): ModelGrantState {
  a.grants ??= { last: 0, live: new Map(), ended: [], order: [null], nextRoll: Number.POSITIVE_INFINITY };
  return a.grants;
}

/** Recomputes the spend order and the next roll: after a grant is added, voided, activated or expires, or a cycle starts. */
export function reorder(a: ModelAccount): void {
  const g = a.grants;
  if (g === undefined) return;
  const cycle = cycleOrderable(a);
  const active = [...g.live.values()].filter((x) => x.state === 'live');
  g.order = [null, ...active].sort((x, y) => compareSources(x ?? cycle, y ?? cycle));
  let next = Number.POSITIVE_INFINITY;
  for (const x of g.live.values()) {
    if (x.state === 'pending') next = Math.min(next, x.effectiveAt);
    if (x.expiresAt !== null) next = Math.min(next, x.expiresAt);
  }
  g.nextRoll = next;
}

/** Newest ended first: by endedAt, then by grant number. */
function newestEndedFirst(x: ModelGrant, y: ModelGrant): number {
  return y.endedAt! - x.endedAt! || y.seq - x.seq;
}

/** Moves a grant that has ended to the archive, keeping the newest ENDED_GRANTS_KEPT. */
export function archive(a: ModelAccount, x: ModelGrant): void {
  const g = grantState(a);
  g.live.delete(x.id);
  g.ended.push(x);
  g.ended.sort(newestEndedFirst);
  if (g.ended.length > ENDED_GRANTS_KEPT) g.ended.length = ENDED_GRANTS_KEPT;
}

/**
 * Brings the grants to now: a pending grant is active from its effectiveAt, a live one expires
 * at its expiresAt (what it has left is expired; what it holds stays held). Exactly at those
 * instants: [effectiveAt, expiresAt) is half-open.
 */
export function rollGrants(a: ModelAccount, now: number): boolean {
  const g = a.grants;
  if (g === undefined || now < g.nextRoll) return false;
  for (const x of [...g.live.values()]) {
    if (x.state === 'pending' && x.effectiveAt <= now) x.state = 'live';
    if (x.expiresAt !== null && x.expiresAt <= now) {
      x.expired += x.remaining;
      x.remaining = 0;
      x.state = 'expired';
      x.endedAt = x.expiresAt;
      archive(a, x);
      a.events?.emit('grant.expired', { grantId: x.id, expired: x.expired, expiresAt: x.expiresAt });
    }
  }
  reorder(a);
  return true;
}

/** The active sources in spend order (null: the current cycle). */
export function spendOrder(a: ModelAccount): ReadonlyArray<ModelGrant | null> {
  return a.grants?.order ?? CYCLE_ONLY;
}

/** What can be spent now, as stored: the cycle's balance and the active grants' remaining. */
export function available(a: ModelAccount): number {
  let sum = a.balance;
  if (a.grants) for (const x of a.grants.live.values()) if (x.state === 'live') sum += x.remaining;
  return sum;
}

/** What would be available at `now` once rolled, read-only (the pre-check of admit and verify). */
export function availableAt(a: ModelAccount, now: number): number {
  let sum = now >= a.cycleEnd ? a.nextAllowance : a.balance;
  if (a.grants) {
    for (const x of a.grants.live.values()) if (x.effectiveAt <= now && (x.expiresAt === null || now < x.expiresAt)) sum += x.remaining;
  }
  return sum;
}

/** The active grant with credits left that expires first (ties: the earlier in spend order). */
export function nextExpiry(a: ModelAccount): AccountCredits['nextExpiry'] {
  let best: ModelGrant | undefined;
  for (const x of spendOrder(a)) {
    if (x === null || x.remaining === 0 || x.expiresAt === null) continue;
    if (best === undefined || x.expiresAt < best.expiresAt!) best = x;
  }
  return best === undefined ? null : { grantId: best.id, expiresAt: best.expiresAt!, amount: best.remaining };
}

/** The account's credits as usage and inspect report them. */
export function creditsOf(a: ModelAccount): AccountCredits {
  return {
    allowance: a.allowance,
    balance: a.balance,
    spent: a.spent,
    held: a.held,
    nextAllowance: a.nextAllowance,
    available: available(a),
    nextExpiry: nextExpiry(a),
  };
}

/** A new grant, pending or (effectiveAt <= now) active; the order is recomputed. */
export function addGrant(
  a: ModelAccount,
  now: number,
  terms: { amount: number; kind: GrantKind; priority: number; effectiveAt: number; expiresAt: number | null; reason: string },
): ModelGrant {
  const g = grantState(a);
  g.last += 1;
  const x: ModelGrant = {
    id: grantIdOf(g.last),
    seq: g.last,
    kind: terms.kind,
    priority: terms.priority,
    amount: terms.amount,
    remaining: terms.amount,
    spent: 0,
    held: 0,
    expired: 0,
    voided: 0,
    refundedAfterEnd: 0,
    effectiveAt: terms.effectiveAt,
    expiresAt: terms.expiresAt,
    createdAt: now,
    endedAt: null,
    state: terms.effectiveAt <= now ? 'live' : 'pending',
    reason: terms.reason,
  };
  g.live.set(x.id, x);
  reorder(a);
  a.events?.emit('grant.added', { grantId: x.id, kind: x.kind, amount: x.amount, effectiveAt: x.effectiveAt, expiresAt: x.expiresAt });
  return x;
}

/** Makes room for one more live grant under `max`: used grants (nothing left, nothing held) are archived, lowest number first. Whether there is room. */
export function makeRoom(a: ModelAccount, now: number, max: number): boolean {
  const g = a.grants;
  if (g === undefined || g.live.size < max) return true;
  const used = [...g.live.values()].filter((x) => x.state === 'live' && x.remaining === 0 && x.held === 0).sort((x, y) => x.seq - y.seq);
  let count = g.live.size;
  for (const x of used) {
    if (count < max) break;
    x.state = 'used';
    x.endedAt = now;
    archive(a, x);
    count -= 1;
  }
  if (used.length > 0) reorder(a);
  return g.live.size < max;
}

/** Voids what a live or pending grant has left; it ends now. What it holds is voided as it is refunded. */
export function voidLive(a: ModelAccount, x: ModelGrant, now: number): number {
  const voided = x.remaining;
  x.voided += voided;
  x.remaining = 0;
  x.state = 'voided';
  x.endedAt = now;
  archive(a, x);
  reorder(a);
  a.events?.emit('grant.voided', { grantId: x.id, voided });
  return voided;
}

/** A grant by id: live, pending or kept ended. */
export function findGrant(a: ModelAccount, id: string): ModelGrant | undefined {
  const g = a.grants;
  if (g === undefined) return undefined;
  return g.live.get(id) ?? g.ended.find((x) => x.id === id);
}

/**
 * Draws n credits in spend order, each source giving what it has left up to what is still
 * needed, into spent (a charge, an adjustment) or held (a hold). Call with n <= available.
 * Returns what each source gave, in draw order.
 */
export function draw(a: ModelAccount, n: number, into: 'spent' | 'held'): CreditSource[] {
  const out: CreditSource[] = [];
  let need = n;
  for (const x of spendOrder(a)) {
    if (need === 0) break;
    const take = Math.min(x === null ? a.balance : x.remaining, need);
    if (take === 0) continue;
    if (x === null) {
      a.balance -= take;
      a[into] += take;
    } else {
      x.remaining -= take;
      x[into] += take;
    }
    out.push({ grantId: x === null ? cycleGrantId(a.cycle) : x.id, amount: take });
    need -= take;
  }
  return out;
}

/** A source by id: the current cycle, an ended cycle, or a grant (undefined when no longer kept). */
type SourceRef =
  | { kind: 'cycle' }
  | { kind: 'ended'; cycle: { held: number; spent: number; refunded: number } }
  | { kind: 'grant'; grant: ModelGrant }
  | undefined;

function sourceOf(a: ModelAccount, id: string): SourceRef {
  if (id.startsWith('cycle:')) {
    const n = Number(id.slice(6));
    if (n === a.cycle) return { kind: 'cycle' };
    const c = a.ended.get(n);
    return c === undefined ? undefined : { kind: 'ended', cycle: c };
  }
  const x = findGrant(a, id);
  return x === undefined ? undefined : { kind: 'grant', grant: x };
}

/** Moves n held credits of a source to spent (a hold's spend). */
export function heldToSpent(a: ModelAccount, id: string, n: number): void {
  const s = sourceOf(a, id);
  if (s === undefined) return;
  if (s.kind === 'cycle') {
    a.held -= n;
    a.spent += n;
  } else {
    const c = s.kind === 'ended' ? s.cycle : s.grant;
    c.held -= n;
    c.spent += n;
  }
}

/**
 * Returns n credits of a source's `from` (held: a hold's refund; spent: credits.refund) to it:
 * to what it has left while it is live; else recorded as refunded after its end (an ended
 * cycle's refunded, an expired or used grant's refundedAfterEnd, a voided grant's voided).
 * Whether the source had ended.
 */
export function giveBack(a: ModelAccount, id: string, n: number, from: 'held' | 'spent'): boolean {
  const s = sourceOf(a, id);
  if (s === undefined) return true;
  if (s.kind === 'cycle') {
    a[from] -= n;
    a.balance += n;
    return false;
  }
  if (s.kind === 'ended') {
    s.cycle[from] -= n;
    s.cycle.refunded += n;
    return true;
  }
  const x = s.grant;
  x[from] -= n;
  if (x.state === 'live') {
    x.remaining += n;
    return false;
  }
  if (x.state === 'voided') x.voided += n;
  else x.refundedAfterEnd += n;
  return true;
}

export { backSlice, frontSlice };

/** A grant as credits.grants lists it. */
export function publicGrant(x: ModelGrant): Grant {
  return {
    grantId: x.id,
    kind: x.kind,
    priority: x.priority,
    amount: x.amount,
    remaining: x.remaining,
    spent: x.spent,
    held: x.held,
    expired: x.expired,
    voided: x.voided,
    refundedAfterEnd: x.refundedAfterEnd,
    effectiveAt: x.effectiveAt,
    expiresAt: x.expiresAt,
    createdAt: x.createdAt,
    endedAt: x.endedAt,
    status: x.state === 'live' ? (x.remaining > 0 ? 'active' : 'used') : x.state,
    reason: x.reason === '' ? null : x.reason,
  };
}

/** The current cycle listed as a source. */
export function cycleGrant(a: ModelAccount): Grant {
  return {
    grantId: cycleGrantId(a.cycle),
    kind: 'plan',
    priority: DEFAULT_PRIORITY,
    amount: a.allowance,
    remaining: a.balance,
    spent: a.spent,
    held: a.held,
    expired: 0,
    voided: 0,
    refundedAfterEnd: 0,
    effectiveAt: a.cycleStart,
    expiresAt: a.cycleEnd,
    createdAt: a.cycleStart,
    endedAt: null,
    status: a.balance > 0 ? 'active' : 'used',
    reason: null,
  };
}

/** The grants as stored (inspect, and the listing after a roll): live in spend order, pending by effectiveAt, then ended newest first. */
export function storedGrants(a: ModelAccount, ended: boolean): Grant[] {
  const g = a.grants;
  if (g === undefined) return [];
  const active = g.order.filter((x): x is ModelGrant => x !== null);
  const pending = [...g.live.values()].filter((x) => x.state === 'pending').sort((x, y) => x.effectiveAt - y.effectiveAt || compareSources(x, y));
  return [...active, ...pending, ...(ended ? g.ended : [])].map(publicGrant);
}

/** credits.grants' list (after a roll): the current cycle, the live and pending grants, then with `ended` the ended grants and cycles, newest first. */
export function listSources(a: ModelAccount, ended: boolean): Grant[] {
  const out = [cycleGrant(a), ...storedGrants(a, ended)];
  if (ended) {
    for (const c of [...a.ended.values()].sort((x, y) => y.id - x.id)) {
      out.push({
        grantId: cycleGrantId(c.id),
        kind: 'plan',
        priority: DEFAULT_PRIORITY,
        amount: c.allowance,
        remaining: 0,
        spent: c.spent,
        held: c.held,
        expired: c.unused,
        voided: 0,
        refundedAfterEnd: c.refunded,
        effectiveAt: c.start,
        expiresAt: c.plannedEnd,
        createdAt: c.start,
        endedAt: c.end,
        status: 'expired',
        reason: null,
      });
    }
  }
  return out;
}
