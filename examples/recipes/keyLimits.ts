// docs/limits.md#per-key-limits: one key of an account held to its own window. `npx tsx examples/recipes/keyLimits.ts`
import { createTollgate } from "tollgate";

const free = { limits: { api: [{ limit: 30, windowMs: 60_000 }] }, credits: { allowance: 100, cycle: { months: 1 } }, holds: { cap: 1, maxItems: 10, surfaces: [] } };
const tollgate = createTollgate({ memory: true, plans: { free } });
await tollgate.accounts.create("acct_team", { plan: "free" }); // 30 requests a minute

// The CI key may send 2 a minute; the account's other keys share the plan's 30.
const { key } = await tollgate.keys.issue("acct_team", { name: "ci", limits: { api: [{ limit: 2, windowMs: 60_000 }] } });
for (let i = 1; i <= 3; i++) {
  const check = await tollgate.keys.verify(key);
  console.log(i, check.valid && check.admission.ok ? 200 : 429);
}
