import type { AccountSnapshot } from '../accounts.ts';
import { compareSources, cycleGrantId, holdParts, type Grant } from '../rules/grants.ts';

/** One broken invariant: which rule, and the numbers that break it. */
export interface InvariantViolation {
  /** The rule, e.g. "balance + spent + held == allowance". */
  rule: string;
  /** Where and by how much. */
  detail: string;
}

/**
 * The credit invariants every account must keep, checked on an account as
 * accounts.inspect reads it from Redis, or as the model's accounts.inspect gives it:
 *   - current cycle: balance + spent + held == allowance, balance >= 0, held >= 0;
 *   - each ended cycle: unused + spent + held + refunded == allowance, held >= 0;
 *   - each hold: spent + refunded <= reserved (so each credit is refunded at most once),
 *     an ended hold holds nothing and says when and why it ended, an items hold reserved
 *     items x (required + optional), settles at most its items, each settled item is
 *     delivered or failed, and it spent exactly delivered x required + optionalSpent;
 *   - held of a cycle == what its open holds still hold;
 *   - cycles never overlap: each ended cycle ends by its planned end and by the start of the
 *     next cycle (an idle account skips whole cycles, so it may end before);
 *   - per source (docs/grants.md#sources): held == what open holds still hold of it (spends
 *     use a hold's sources from the front, refunds from the end), and each grant keeps
 *     checkSources' rules; available == the cycle's balance + the live grants' remaining, and
 *     nextExpiry is the live grant with credits left that expires first.
 */
export function checkInvariants(s: AccountSnapshot): InvariantViolation[] {
  const out: InvariantViolation[] = [];
  const fail = (rule: string, detail: string) => out.push({ rule, detail });
  const c = s.credits;
  if (c.balance + c.spent + c.held !== c.allowance) fail('balance + spent + held == allowance', `${c.balance} + ${c.spent} + ${c.held} != ${c.allowance}`);
  if (c.balance < 0) fail('balance >= 0', String(c.balance));
  if (c.held < 0) fail('held >= 0', String(c.held));
  const heldBy = new Map<number, number>();
  const heldOf = new Map<string, number>();
  for (const h of s.holds) {
    const drawn = h.sources.reduce((sum, x) => sum + x.amount, 0);
    if (drawn !== h.reserved) fail("a hold's sources add up to reserved", `${h.id}: ${drawn} != ${h.reserved}`);
    if (h.status === 'open')
      for (const part of holdParts(h.sources, h.spent, h.refunded)) heldOf.set(part.grantId, (heldOf.get(part.grantId) ?? 0) + part.held);
    if (h.spent + h.refunded > h.reserved) fail('spent + refunded <= reserved', `${h.id}: ${h.spent} + ${h.refunded} > ${h.reserved}`);
    if (h.held !== h.reserved - h.spent - h.refunded) fail('held == reserved - spent - refunded', h.id);
    if (h.status !== 'open' && h.held !== 0) fail('an ended hold holds nothing', `${h.id} holds ${h.held}`);
    if (h.status !== 'open' && (h.endedAt === null || h.endReason === null)) fail('an ended hold has endedAt and endReason', h.id);
    if (h.refundedToEndedCycle > h.refunded) fail('refundedToEndedCycle <= refunded', h.id);
    if (h.kind === 'items') {
      const failed = Object.values(h.failed).reduce((sum, n) => sum + n, 0);
      if (h.settled > h.items) fail('settled <= items', `${h.id}: ${h.settled} > ${h.items}`);
      if (h.delivered + failed !== h.settled) fail('delivered + failed == settled', h.id);
      if (h.reserved !== h.items * (h.perItem.required + h.perItem.optional)) fail('reserved == items x (required + optional)', h.id);
      if (h.spent !== h.delivered * h.perItem.required + h.optionalSpent) fail('spent == delivered x required + optionalSpent', h.id);
      if (h.optionalSpent > h.delivered * h.perItem.optional) fail('optionalSpent <= delivered x optional', h.id);
    }
    if (h.status === 'open') heldBy.set(h.cycleId, heldOf.get(cycleGrantId(h.cycleId)) ?? 0);
  }
  for (const e of s.endedCycles) {
    if (e.unused + e.spent + e.held + e.refunded !== e.allowance) fail('ended cycle: unused + spent + held + refunded == allowance', `cycle ${e.id}`);
    if (e.held < 0) fail('ended cycle: held >= 0', `cycle ${e.id}: ${e.held}`);
    if (e.held !== (heldBy.get(e.id) ?? 0)) fail("ended cycle held == its open holds' holds", `cycle ${e.id}: ${e.held} != ${heldBy.get(e.id) ?? 0}`);
  }
  const cycles = [...s.endedCycles].sort((x, y) => x.id - y.id);
  cycles.forEach((e, i) => {
    const next = cycles[i + 1] ?? s.cycle;
    if (e.start > e.end || e.end > e.plannedEnd) fail('ended cycle: start <= end <= plannedEnd', `cycle ${e.id}: ${e.start}, ${e.end}, ${e.plannedEnd}`);
    if (e.end > next.start) fail('cycles never overlap', `cycle ${e.id} ends at ${e.end}, after cycle ${next.id} starts at ${next.start}`);
  });
  if (c.held !== (heldBy.get(s.cycle.id) ?? 0)) fail("held == open holds' holds", `${c.held} != ${heldBy.get(s.cycle.id) ?? 0}`);
  for (const g of s.grants) {
    if (g.held !== (heldOf.get(g.grantId) ?? 0)) fail("a grant's held == open holds' holds of it", `${g.grantId}: ${g.held} != ${heldOf.get(g.grantId) ?? 0}`);
  }
  out.push(...checkSources(s.grants));
  // The live grants are listed in spend order, the cycle between them where it falls.
  const orderable = (g: Grant) => ({ ...g, kind: g.kind, seq: Number(g.grantId.slice(1)) });
  const listed = s.grants.filter((g) => (g.status === 'active' || g.status === 'used') && g.endedAt === null);
  for (let i = 1; i < listed.length; i++) {
    if (compareSources(orderable(listed[i - 1]!), orderable(listed[i]!)) >= 0)
      fail('live grants are kept in spend order', `${listed[i - 1]!.grantId} before ${listed[i]!.grantId}`);
  }
  const live = s.grants.filter((g) => (g.status === 'active' || g.status === 'used') && g.endedAt === null);
  const available = c.balance + live.reduce((sum, g) => sum + g.remaining, 0);
  if (c.available !== available) fail("available == the live sources' remaining", `${c.available} != ${available}`);
  const expiring = live.filter((g) => g.remaining > 0 && g.expiresAt !== null);
  const soonest = expiring.length === 0 ? null : Math.min(...expiring.map((g) => g.expiresAt!));
  if ((c.nextExpiry?.expiresAt ?? null) !== soonest)
    fail('nextExpiry is the soonest expiry of a live grant with credits left', `${c.nextExpiry?.expiresAt ?? null} != ${soonest}`);
  const next = live.find((g) => g.grantId === c.nextExpiry?.grantId);
  if (c.nextExpiry !== null && (next === undefined || next.remaining !== c.nextExpiry.amount))
    fail("nextExpiry's amount is its grant's remaining", c.nextExpiry.grantId);
  return out;
}

/**
 * Each source's rules (docs/grants.md#sources), on a grant list (inspect's `grants`, or
 * credits.grants with its cycles): remaining + spent + held + expired + voided +
 * refundedAfterEnd == amount, every part >= 0, nothing left once ended, a pending source has
 * spent nothing, and an ended source says when it ended.
 */
export function checkSources(grants: readonly Grant[]): InvariantViolation[] {
  const out: InvariantViolation[] = [];
  const fail = (rule: string, detail: string) => out.push({ rule, detail });
  for (const g of grants) {
    const parts = [g.remaining, g.spent, g.held, g.expired, g.voided, g.refundedAfterEnd];
    const sum = parts.reduce((x, y) => x + y, 0);
    if (sum !== g.amount) fail('remaining + spent + held + expired + voided + refundedAfterEnd == amount', `${g.grantId}: ${parts.join(' + ')} != ${g.amount}`);
    if (parts.some((n) => n < 0)) fail('every part of a source >= 0', `${g.grantId}: ${parts.join(', ')}`);
    const ended = g.status === 'expired' || g.status === 'voided' || g.endedAt !== null;
    if (ended && g.remaining !== 0) fail('remaining == 0 once ended', `${g.grantId}: ${g.remaining}`);
    if ((g.status === 'expired' || g.status === 'voided') && g.endedAt === null) fail('an ended source says when it ended', g.grantId);
    if ((g.status === 'active' || g.status === 'pending') && g.endedAt !== null) fail('a live or pending source has not ended', g.grantId);
    if (g.status === 'pending' && g.remaining !== g.amount) fail('a pending source is whole', g.grantId);
    const endedParts = { expired: g.expired, voided: g.voided, refundedAfterEnd: g.refundedAfterEnd };
    const mayHave =
      g.endedAt === null ? [] : g.status === 'expired' ? ['expired', 'refundedAfterEnd'] : g.status === 'voided' ? ['voided'] : ['refundedAfterEnd'];
    for (const [part, n] of Object.entries(endedParts)) {
      if (n !== 0 && !mayHave.includes(part))
        fail(`only a source ended so has ${part}`, `${g.grantId} (${g.status}${g.endedAt === null ? '' : ', ended'}): ${n}`);
    }
    if (g.status === 'active' && g.remaining === 0) fail('an active source has credits left', g.grantId);
    if (g.expiresAt !== null && g.expiresAt <= g.effectiveAt) fail('a source expires after it is effective', g.grantId);
  }
  return out;
}
