// docs/limits.md#token-buckets: a burst at once, then an even refill. `npx tsx examples/recipes/bucket.ts`
import { createTollgate } from "tollgate";

let now = Date.UTC(2026, 0, 1);
const free = { limits: { api: [{ limit: 30, windowMs: 60_000 }] }, credits: { allowance: 100, cycle: { months: 1 } }, holds: { cap: 1, maxItems: 10, surfaces: [] } };
const tollgate = createTollgate({
  memory: true,
  clock: () => now,
  plans: { free },
  // 2 uploads a second on average, up to 5 at once.
  policies: { uploads: { api: [{ algorithm: "bucket", limit: 2, windowMs: 1_000, burst: 5 }] } },
});

const results = [];
for (let i = 0; i < 6; i++) results.push((await tollgate.limits.admit("user_7", { policy: "uploads" })).ok);
console.log(results.join(" ")); // the burst of 5, then a denial
now += 500; // one token back every 500 ms
const next = await tollgate.limits.admit("user_7", { policy: "uploads" });
console.log(next.ok, next.rateLimit.remaining);
