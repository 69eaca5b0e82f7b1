import type { AccountSnapshot } from '../accounts.ts';

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
 *     next cycle (an idle account skips whole cycles, so it may end before).
 */
export function checkInvariants(s: AccountSnapshot): InvariantViolation[] {
  const out: InvariantViolation[] = [];
  const fail = (rule: string, detail: string) => out.push({ rule, detail });
  const c = s.credits;
  if (c.balance + c.spent + c.held !== c.allowance) fail('balance + spent + held == allowance', `${c.balance} + ${c.spent} + ${c.held} != ${c.allowance}`);
  if (c.balance < 0) fail('balance >= 0', String(c.balance));
  if (c.held < 0) fail('held >= 0', String(c.held));
  const heldBy = new Map<number, number>();
  for (const h of s.holds) {
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
    if (h.status === 'open') heldBy.set(h.cycleId, (heldBy.get(h.cycleId) ?? 0) + h.held);
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
  return out;
}
