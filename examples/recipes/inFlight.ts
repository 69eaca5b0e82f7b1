// docs/limits.md#concurrency-limits: 5 completions in flight per key. `npx tsx examples/recipes/inFlight.ts`
import { createTollgate } from "tollgate";

const tollgate = createTollgate({
  memory: true,
  plans: {
    llm: {
      // 5 completions at once; a place not released frees itself after 2 minutes.
      limits: { completions: [{ algorithm: "concurrency", limit: 5, leaseMs: 120_000 }] },
      credits: { allowance: 1_000, cycle: { months: 1 } },
      holds: { cap: 1, maxItems: 1, surfaces: [] },
    },
  },
});
await tollgate.accounts.create("acct_llm", { plan: "llm" });
const { key } = await tollgate.keys.issue("acct_llm");

const running: string[] = [];
for (let i = 1; i <= 6; i++) {
  const check = await tollgate.keys.verify(key, { surface: "completions" });
  if (!check.valid) throw new Error(check.reason);
  if (check.admission.ok) running.push(check.admission.lease!);
  else console.log(i, check.admission.reason); // the 6th: "concurrency"
}
await tollgate.limits.release("acct_llm", running[0]!); // a completion is done
const next = await tollgate.keys.verify(key, { surface: "completions" });
console.log(next.valid && next.admission.ok);
