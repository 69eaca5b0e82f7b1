// docs/limits.md#overrides: a temporary raise for one customer. `npx tsx examples/recipes/override.ts`
import { createTollgate } from "tollgate";

let now = Date.UTC(2026, 0, 1);
const free = { limits: { api: [{ limit: 30, windowMs: 60_000 }] }, credits: { allowance: 100, cycle: { months: 1 } }, holds: { cap: 1, maxItems: 10, surfaces: [] } };
const tollgate = createTollgate({ memory: true, plans: { free }, clock: () => now });
await tollgate.accounts.create("acct_launch", { plan: "free" }); // 30 requests a minute

// Launch day: 300 a minute for 24 hours, the count kept.
await tollgate.limits.override("acct_launch", {
  surface: "api",
  windows: [{ limit: 300, windowMs: 60_000 }],
  expiresAt: now + 86_400_000,
});
console.log((await tollgate.limits.admit("acct_launch")).rateLimit.limit);
now += 86_400_000; // the next day the plan's limit is back by itself
console.log((await tollgate.limits.admit("acct_launch")).rateLimit.limit);
