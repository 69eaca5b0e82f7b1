/**
 * Holds in the reference model (docs/holds.md): credits reserved upfront and settled item by
 * item (or drawn from a budget), ended with refunds to the cycle that paid, by their worker or
 * by their lease. Also the sweep, which finds subjects whose leases may have run out.
 */
import { InvalidInputError, HoldNotFoundError } from '../errors.ts';
import { insufficient } from '../rules/credits.ts';
import {
  budgetArgs,
  endOutcome,
  holdIdArg,
  openArgs,
  settleArgs,
  settled,
  settleRefused,
  spendArgs,
  surfaceNotAllowed,
  type EndOutcome,
  type HoldSize,
  type IdempotencyInput,
  type OpenBudgetRequest,
  type OpenHoldRequest,
  type OpenOutcome,
  type RenewOutcome,
  type SettleOutcome,
  type Settlement,
  type Spend,
} from '../rules/holds.ts';
import { claimOf } from '../idempotency.ts';
import type { Hold, HoldKind } from '../rules/records.ts';
import { count, shortId, subjectId } from '../rules/validate.ts';
import { surfaceName } from '../rules/windows.ts';
import type { ModelAccount, ModelCore, ModelHold } from './core.ts';
import { journal, recordHistory } from './credits.ts';
import { roll } from './cycles.ts';
import { checkKey, storeOutcome } from './idempotency.ts';
import { checkEvents, holdLapsed } from './events.ts';

/** Distinct failure labels one hold may count. */
const MAX_LABELS = 16;

type Size = HoldSize;

/** Moves n held credits to spent, on the cycle that paid for the hold. */
function spend(core: ModelCore, a: ModelAccount, h: ModelHold, n: number): void {
  if (n <= 0) return;
  if (h.cycleId === a.cycle) {
    a.held -= n;
    a.spent += n;
  } else {
    const c = a.ended.get(h.cycleId)!;
    c.held -= n;
    c.spent += n;
  }
  h.spent += n;
  h.held -= n;
  journal(core, a, 'spend', n, h.cycleId);
  recordHistory(core, a, 's', n);
}

/** A refund goes to the cycle that paid; an ended cycle records it only. */
function refund(core: ModelCore, a: ModelAccount, h: ModelHold, n: number): void {
  if (n <= 0) return;
  if (h.cycleId === a.cycle) {
    a.held -= n;
    a.balance += n;
  } else {
    const c = a.ended.get(h.cycleId)!;
    c.held -= n;
    c.refunded += n;
    h.refundedToEndedCycle += n;
  }
  h.refunded += n;
  h.held -= n;
  journal(core, a, 'refund', n, h.cycleId);
  recordHistory(core, a, 'r', n);
}

function endHold(core: ModelCore, a: ModelAccount, h: ModelHold, status: 'completed' | 'canceled', reason: NonNullable<Hold['endReason']>): void {
  if (reason === 'lease_expired') holdLapsed(a, h);
  refund(core, a, h, h.reserved - h.spent - h.refunded);
  h.status = status;
  h.endReason = reason;
  h.endedAt = core.now();
}

export function openHolds(a: ModelAccount): ModelHold[] {
  return [...a.holds.values()].filter((h) => h.status === 'open');
}

/** Ended holds dropped beyond what the count bound needs (lua/lib/holds.lua HOLDS_TIDY_SLACK). */
const TIDY_SLACK = 15;

/** Ends every open hold whose lease ran out (now >= lease); how many. */
function expireLapsed(core: ModelCore, a: ModelAccount): number {
  const now = core.now();
  const lapsed = openHolds(a).filter((h) => now >= h.leaseExpiresAt);
  for (const h of lapsed) endHold(core, a, h, 'completed', 'lease_expired');
  if (lapsed.length > 0) checkEvents(a);
  return lapsed.length;
}

/**
 * A tidy: the cycle rolls, lapsed holds end, then ended holds are
 * dropped: with endedMax or more, the oldest down to endedMax - 1 - TIDY_SLACK, then those
 * kept endedKeepMs. A dropped hold's id is kept operationTtlMs. How many holds ended.
 */
export function tidy(core: ModelCore, a: ModelAccount): number {
  const now = core.now();
  roll(a, now);
  const ended = expireLapsed(core, a);
  const done = [...a.holds.values()].filter((h) => h.status !== 'open').sort((x, y) => x.endedAt! - y.endedAt! || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  const drop = done.length >= core.endedMax ? done.slice(0, done.length - core.endedMax + 1 + TIDY_SLACK) : [];
  for (const h of done) if (!drop.includes(h) && now - h.endedAt! >= core.endedKeepMs) drop.push(h);
  for (const h of drop) {
    a.holds.delete(h.id);
    a.droppedHolds.set(h.id, true, now + core.operationTtlMs, now);
  }
  return ended;
}

/** A read that finds lapsed holds has them tidied first (HOLDS_DUE). */
export function tidyIfLapsed(core: ModelCore, a: ModelAccount): void {
  const now = core.now();
  if (openHolds(a).some((h) => now >= h.leaseExpiresAt)) tidy(core, a);
}

/** Newest first, as the library lists them: by creation time, then by id in reverse byte order. */
export function newestFirst(x: Hold, y: Hold): number {
  if (x.createdAt !== y.createdAt) return y.createdAt - x.createdAt;
  return x.id < y.id ? 1 : x.id > y.id ? -1 : 0;
}

export function publicHold(h: ModelHold): Hold {
  const { items_: _items, leaseMs_: _lease, ...hold } = h;
  return structuredClone({ ...hold, failed: { ...hold.failed } });
}

/** As tollgate.holds: open, openBudget, settle, spend, finish, cancel, get, list, sweep, sweepSubject. */
export class ModelHolds {
  constructor(private readonly core: ModelCore) {}

  /** Reserves items x (required + optional) credits within the plan's cap and maxItems. */
  open(subject: string, request: OpenHoldRequest): OpenOutcome {
    return this.openAny(subject, 'items', request?.surface ?? 'api', openArgs(request), request);
  }

  /** Reserves a budget of `amount` credits, drawn item by item with spend. */
  openBudget(subject: string, request: OpenBudgetRequest): OpenOutcome {
    return this.openAny(subject, 'budget', request?.surface ?? 'api', budgetArgs(request), request);
  }

  /** Renews an open hold's lease from now without settling; a hold that has ended (or whose lease ran out, ending it now) is `ended`. */
  renew(subject: string, holdId: string): RenewOutcome {
    subjectId(subject);
    const id = shortId('Hold id', holdId);
    const a = this.core.account(subject);
    const now = this.core.now();
    roll(a, now);
    const h = a.holds.get(id);
    if (!h) throw new HoldNotFoundError(id);
    if (h.status !== 'open') return { ok: false, reason: 'ended' };
    if (now >= h.leaseExpiresAt) {
      endHold(this.core, a, h, 'completed', 'lease_expired');
      checkEvents(a);
      return { ok: false, reason: 'ended' };
    }
    h.leaseExpiresAt = now + (h.leaseMs_ || this.core.leaseMs);
    return { ok: true, leaseUntil: h.leaseExpiresAt };
  }

  /** Settles one item of an items hold, delivered or failed; a repeat is a replay. */
  settle(subject: string, holdId: string, settlement: Settlement): SettleOutcome {
    return this.settleAny(subject, holdId, 'items', settleArgs(settlement));
  }

  /** Takes `amount` credits from a budget hold; more than is left takes nothing. */
  spend(subject: string, holdId: string, draw: Spend): SettleOutcome {
    return this.settleAny(subject, holdId, 'budget', spendArgs(draw));
  }

  /** Ends a hold as completed, refunding what it did not use. */
  finish(subject: string, holdId: string): EndOutcome {
    return this.end(subject, holdId, 'completed');
  }

  /** Cancels a hold, refunding everything it still holds. */
  cancel(subject: string, holdId: string): EndOutcome {
    return this.end(subject, holdId, 'canceled');
  }

  /** One hold of the subject. */
  get(subject: string, holdId: string): Hold {
    const a = this.core.account(subject);
    const id = shortId('Hold id', holdId);
    // A read writes nothing: no rollover unless lapsed holds are tidied.
    tidyIfLapsed(this.core, a);
    const h = a.holds.get(id);
    if (!h) throw new HoldNotFoundError(id);
    return publicHold(h);
  }

  /** The subject's holds, newest first, a page at a time. */
  list(subject: string, page: { offset?: number; limit?: number } = {}): { total: number; active: number; holds: Hold[] } {
    subjectId(subject);
    const offset = count('offset', page.offset ?? 0);
    const limit = count('limit', page.limit ?? 50, 0, 1000);
    const a = this.core.account(subject);
    tidyIfLapsed(this.core, a);
    const all = [...a.holds.values()].sort(newestFirst);
    return { total: all.length, active: openHolds(a).length, holds: all.slice(offset, offset + limit).map(publicHold) };
  }

  /** Ends one subject's lapsed holds now, and drops its ended holds past their bounds. */
  sweepSubject(subject: string): { ended: number; nextLeaseAt: number | null } {
    const a = this.core.state.get(subjectId(subject));
    if (!a) return { ended: 0, nextLeaseAt: null };
    const ended = tidy(this.core, a);
    const leases = openHolds(a).map((h) => h.leaseExpiresAt);
    // An account with events is swept again when its cycle ends (docs/events.md#time-driven-events).
    if (a.events) leases.push(a.cycleEnd);
    return { ended, nextLeaseAt: leases.length === 0 ? null : Math.min(...leases) };
  }

  /** Ends every lapsed hold, subject by subject, in batches of the sweep index's due subjects. */
  sweep(options: { batch?: number; maxRounds?: number } = {}): { subjects: number; ended: number } {
    const batch = count('batch', options.batch ?? 100, 1, 10_000);
    const maxRounds = count('maxRounds', options.maxRounds ?? 100, 1);
    const index = this.core.sweepIndex;
    let subjects = 0;
    let ended = 0;
    for (let round = 0; round < maxRounds; round++) {
      const now = this.core.now();
      const due = [...index]
        .filter(([, score]) => score <= now)
        .sort(([x, sx], [y, sy]) => sx - sy || (x < y ? -1 : x > y ? 1 : 0))
        .slice(0, batch);
      for (const [subject, seen] of due) {
        const swept = this.sweepSubject(subject);
        subjects++;
        ended += swept.ended;
        if (index.get(subject) !== seen) continue;
        if (swept.nextLeaseAt === null) index.delete(subject);
        else index.set(subject, swept.nextLeaseAt);
      }
      if (due.length < batch) break;
    }
    return { subjects, ended };
  }

  private openAny(subject: string, kind: HoldKind, surfaceArg: string, size: Size, request: { idempotency?: IdempotencyInput; holdId?: string }): OpenOutcome {
    const id = subjectId(subject);
    const surface = surfaceName('Surface', surfaceArg);
    const { holdId, own } = holdIdArg(request.holdId);
    const claim = claimOf(request.idempotency);
    const now = this.core.now();
    // The sweep learns of the subject before the hold exists, as on Redis (lua/sweepMark.lua):
    // an entry already earlier and not yet due stays.
    const leaseUntil = now + (size.leaseMs || this.core.leaseMs);
    const marked = this.core.sweepIndex.get(id);
    if (marked === undefined || marked > leaseUntil || marked <= now) this.core.sweepIndex.set(id, leaseUntil);
    const a = this.core.account(id);
    roll(a, now);
    if (claim) {
      const found = checkKey(this.core, id, claim.key, claim.fingerprint, claim.token);
      if (found?.state === 'reused') return { ok: false, reason: 'idempotency_key_reused' };
      if (found?.state === 'in_use') return { ok: false, reason: 'idempotency_key_in_use' };
      if (found?.state === 'replay') {
        const stored = found.outcome;
        return stored.kind === 'hold'
          ? { ok: true, hold: stored.hold, replayed: true }
          : { ok: false, reason: 'hold_limit_reached', active: stored.active, cap: stored.cap, replayed: true };
      }
    }
    // An outcome that is not kept under the key frees it for a corrected retry.
    const release = () => {
      const rec = claim && this.core.idempotency.get(`${id}\0${claim.key}`, now);
      if (claim && rec && rec.outcome === null && rec.token === claim.token) this.core.idempotency.delete(`${id}\0${claim.key}`);
    };
    tidy(this.core, a);
    const existing = a.holds.get(holdId);
    if (existing) {
      const same =
        existing.kind === kind &&
        existing.surface === surface &&
        existing.items === size.items &&
        existing.perItem.required === size.required &&
        existing.perItem.optional === size.optional &&
        (kind === 'items' || existing.reserved === size.amount);
      if (!same) {
        release();
        throw new InvalidInputError(`Hold id "${holdId}" is already taken by a hold with other terms`);
      }
      if (claim) storeOutcome(this.core, id, claim.key, claim.fingerprint, { kind: 'hold', hold: publicHold(existing) });
      return { ok: true, hold: publicHold(existing), replayed: own || claim !== undefined };
    }
    if (a.droppedHolds.get(holdId, now)) {
      release();
      throw new InvalidInputError(`Hold id "${holdId}" was taken by a hold that has ended and is no longer kept`);
    }
    const rules = a.plan.holds;
    if (!rules.surfaces.includes(surface)) {
      release();
      return surfaceNotAllowed(surface, [...rules.surfaces]);
    }
    if (kind === 'items' && size.items > rules.maxItems) {
      release();
      return { ok: false, reason: 'too_many_items', max: rules.maxItems };
    }
    const active = openHolds(a).length;
    if (active >= rules.cap) {
      if (claim) storeOutcome(this.core, id, claim.key, claim.fingerprint, { kind: 'hold_limit_reached', active, cap: rules.cap });
      return { ok: false, reason: 'hold_limit_reached', active, cap: rules.cap, replayed: false };
    }
    const reserve = kind === 'items' ? size.items * (size.required + size.optional) : size.amount;
    if (a.balance < reserve) {
      release();
      return insufficient(a.balance, reserve);
    }
    a.balance -= reserve;
    a.held += reserve;
    journal(this.core, a, 'reserve', reserve, a.cycle);
    checkEvents(a);
    const h: ModelHold = {
      id: holdId,
      kind,
      status: 'open',
      surface,
      items: size.items,
      perItem: { required: size.required, optional: size.optional },
      reserved: reserve,
      settled: 0,
      delivered: 0,
      failed: {},
      optionalSpent: 0,
      spent: 0,
      refunded: 0,
      refundedToEndedCycle: 0,
      held: reserve,
      cycleId: a.cycle,
      createdAt: now,
      endedAt: null,
      leaseExpiresAt: leaseUntil,
      endReason: null,
      items_: new Set(),
      leaseMs_: size.leaseMs,
    };
    a.holds.set(holdId, h);
    if (claim) storeOutcome(this.core, id, claim.key, claim.fingerprint, { kind: 'hold', hold: publicHold(h) });
    return { ok: true, hold: publicHold(h), replayed: false };
  }

  private settleAny(
    subject: string,
    holdIdGiven: string,
    kind: HoldKind,
    what: { itemId: string; failed: string; optionalSpent: number; amount: number },
  ): SettleOutcome {
    subjectId(subject);
    const holdId = shortId('Hold id', holdIdGiven);
    const a = this.core.account(subject);
    const now = this.core.now();
    roll(a, now);
    const h = a.holds.get(holdId);
    if (h?.items_.has(what.itemId)) return settled(publicHold(h), true);
    if (!h) throw new HoldNotFoundError(holdId);
    if (h.kind !== kind) throw new InvalidInputError(`Hold "${holdId}" is not of the kind this call settles (items: settle, budget: spend)`);
    if (h.status !== 'open') return settleRefused('hold_ended', publicHold(h));
    if (now >= h.leaseExpiresAt) {
      endHold(this.core, a, h, 'completed', 'lease_expired');
      checkEvents(a);
      return settleRefused('lease_expired', publicHold(h));
    }
    if (kind === 'budget') {
      if (what.amount > h.reserved - h.spent) return settleRefused('budget_exhausted', publicHold(h));
      spend(this.core, a, h, what.amount);
      if (what.amount > 0) h.delivered += 1;
    } else if (what.failed !== '') {
      if (h.failed[what.failed] === undefined && Object.keys(h.failed).length >= MAX_LABELS) {
        return settleRefused('too_many_labels', publicHold(h));
      }
      h.failed[what.failed] = (h.failed[what.failed] ?? 0) + 1;
    } else {
      if (what.optionalSpent > h.perItem.optional) throw new InvalidInputError(`optionalSpent is above the optional credits per item of hold "${holdId}"`);
      spend(this.core, a, h, h.perItem.required + what.optionalSpent);
      h.delivered += 1;
      h.optionalSpent += what.optionalSpent;
    }
    h.settled += 1;
    h.items_.add(what.itemId);
    h.leaseExpiresAt = now + (h.leaseMs_ || this.core.leaseMs);
    if (kind === 'items' ? h.settled >= h.items : h.spent >= h.reserved) endHold(this.core, a, h, 'completed', kind === 'items' ? 'settled' : 'exhausted');
    checkEvents(a);
    return settled(publicHold(h), false);
  }

  private end(subject: string, holdIdGiven: string, status: 'completed' | 'canceled'): EndOutcome {
    subjectId(subject);
    const holdId = shortId('Hold id', holdIdGiven);
    const a = this.core.account(subject);
    roll(a, this.core.now());
    const h = a.holds.get(holdId);
    if (!h) throw new HoldNotFoundError(holdId);
    if (h.status !== 'open') return endOutcome(false, publicHold(h));
    endHold(this.core, a, h, status, status === 'canceled' ? 'canceled' : 'finished');
    checkEvents(a);
    return endOutcome(true, publicHold(h));
  }
}
