// The credit invariants (SPEC §3, §6), checked on what Redis holds (accounts.inspect), with no
// model in between: an auditor of its own, as TigerBeetle's checks its ledger. No vitest
// import: the soak's child processes load this file too.
import type { AccountSnapshot } from '../../src/index.ts';

export interface Violation {
  rule: string;
  detail: string;
}

/**
 * Every rule a stored account must keep:
 *   - current cycle: balance + spent + held == allowance, balance >= 0, held >= 0;
 *   - each ended cycle: unused + spent + held + refunded == allowance;
 *   - held of each cycle == what the open holds it paid for still hold;
 *   - each hold: spent + refunded <= reserved, held == reserved - spent - refunded, an ended
 *     hold holds nothing, an items hold settles at most its items and spends exactly
 *     delivered x required + optionalSpent, a refund to an ended cycle is part of refunded.
 */
export function snapshotViolations(s: AccountSnapshot): Violation[] {
  const out: Violation[] = [];
  const fail = (rule: string, detail: string) => out.push({ rule, detail });
  const c = s.credits;
  if (c.balance + c.spent + c.held !== c.allowance) fail('balance + spent + held == allowance', `${c.balance} + ${c.spent} + ${c.held} != ${c.allowance}`);
  if (c.balance < 0) fail('balance >= 0', String(c.balance));
  if (c.held < 0) fail('held >= 0', String(c.held));
  const heldBy = new Map<number, number>();
  for (const h of s.holds) {
    const still = h.reserved - h.spent - h.refunded;
    if (h.held !== still) fail('held == reserved - spent - refunded', `${h.id}: ${h.held} != ${still}`);
    if (still < 0) fail('spent + refunded <= reserved', `${h.id}: ${h.spent} + ${h.refunded} > ${h.reserved}`);
    if (h.status !== 'open' && still !== 0) fail('an ended hold holds nothing', `${h.id} (${h.status}) holds ${still}`);
    if (h.status !== 'open' && (h.endedAt === null || h.endReason === null)) fail('an ended hold has endedAt and endReason', h.id);
    if (h.refundedToEndedCycle > h.refunded) fail('refundedToEndedCycle <= refunded', h.id);
    if (h.kind === 'items') {
      const failed = Object.values(h.failed).reduce((sum, n) => sum + n, 0);
      if (h.settled > h.items) fail('settled <= items', `${h.id}: ${h.settled} > ${h.items}`);
      if (h.delivered + failed !== h.settled) fail('delivered + failed == settled', `${h.id}: ${h.delivered} + ${failed} != ${h.settled}`);
      if (h.reserved !== h.items * (h.perItem.required + h.perItem.optional)) fail('reserved == items x (required + optional)', h.id);
      const spent = h.delivered * h.perItem.required + h.optionalSpent;
      if (h.spent !== spent) fail('spent == delivered x required + optionalSpent', `${h.id}: ${h.spent} != ${spent}`);
      if (h.optionalSpent > h.delivered * h.perItem.optional) fail('optionalSpent <= delivered x optional', h.id);
    }
    if (h.status === 'open') heldBy.set(h.cycleId, (heldBy.get(h.cycleId) ?? 0) + still);
  }
  if (c.held !== (heldBy.get(s.cycle.id) ?? 0)) fail("held == the open holds' held", `${c.held} != ${heldBy.get(s.cycle.id) ?? 0}`);
  for (const e of s.endedCycles) {
    if (e.unused + e.spent + e.held + e.refunded !== e.allowance) fail('ended cycle: unused + spent + held + refunded == allowance', `cycle ${e.id}: ${e.unused} + ${e.spent} + ${e.held} + ${e.refunded} != ${e.allowance}`);
    if (e.held !== (heldBy.get(e.id) ?? 0)) fail("ended cycle: held == its open holds' held", `cycle ${e.id}: ${e.held} != ${heldBy.get(e.id) ?? 0}`);
  }
  return out;
}
