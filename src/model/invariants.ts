import type { ModelAccount } from "./model.ts";

export interface InvariantViolation {
  rule: string;
  detail: string;
}

/**
 * The credit invariants every state must keep (SPEC §3, §6), checked on any account state
 * read back from Redis or held by the model:
 *   - current cycle: balance + spent + held == allowance, balance >= 0, held >= 0;
 *   - each ended cycle: unused + spent + held + refunded == allowance, held >= 0;
 *   - each job: results <= videos, spent + refunded <= reserved, an ended job holds nothing;
 *   - held of a cycle == what its open jobs still hold.
 */
export function checkInvariants(a: ModelAccount): InvariantViolation[] {
  const out: InvariantViolation[] = [];
  const fail = (rule: string, detail: string) => out.push({ rule, detail });
  if (a.balance + a.spent + a.held !== a.allowance) {
    fail("balance + spent + held == allowance", `${a.balance} + ${a.spent} + ${a.held} != ${a.allowance}`);
  }
  if (a.balance < 0) fail("balance >= 0", String(a.balance));
  if (a.held < 0) fail("held >= 0", String(a.held));
  const heldBy = new Map<number, number>();
  for (const job of a.jobs.values()) {
    const results = job.delivered + job.failedUnavailable + job.failedNoCaptions;
    if (job.kind === "bulk" && results > job.videos) fail("results <= videos", `${job.id}: ${results} > ${job.videos}`);
    if (job.spent + job.refunded > job.reserved) fail("spent + refunded <= reserved", job.id);
    const open = job.status === "queued" || job.status === "running";
    const holds = job.reserved - job.spent - job.refunded;
    if (!open && holds !== 0) fail("an ended job holds nothing", `${job.id} holds ${holds}`);
    if (open) heldBy.set(job.cycle, (heldBy.get(job.cycle) ?? 0) + holds);
  }
  for (const [id, c] of a.ended) {
    if (c.unused + c.spent + c.held + c.refunded !== c.allowance) {
      fail("ended cycle: unused + spent + held + refunded == allowance", `cycle ${id}`);
    }
    if (c.held !== (heldBy.get(id) ?? 0)) fail("ended cycle held == its open jobs' holds", `cycle ${id}: ${c.held}`);
  }
  if (a.held !== (heldBy.get(a.cycle) ?? 0)) fail("held == open jobs' holds", `${a.held} != ${heldBy.get(a.cycle) ?? 0}`);
  return out;
}
