// docs/memory.md#what-it-is-for: a tollgate without Redis, as a unit test of a host's own code would use
// it, with the clock moved by hand. `npm run example examples/recipes/memory.ts`
import { createTollgate } from "tollgate";

let now = Date.UTC(2026, 0, 1);
const tollgate = createTollgate({
  memory: true, // this process only: nothing shared, nothing kept across a restart
  clock: () => now, // a test moves time by hand
  plans: { basic: { limits: { api: [{ limit: 2, windowMs: 60_000 }] }, credits: { allowance: 10, cycle: { months: 1 } }, holds: { cap: 1, maxItems: 10, surfaces: ["api"] } } },
});

await tollgate.accounts.create("acct_1", { plan: "basic" });
const { key } = await tollgate.keys.issue("acct_1");
for (let i = 1; i <= 3; i++) {
  const check = await tollgate.keys.verify(key, { credits: 1 });
  console.log(i, check.ok && check.admission.ok ? 200 : 429);
}
now += 60_000; // a minute later the window has room again
console.log((await tollgate.limits.admit("acct_1")).ok);
console.log(await tollgate.credits.charge("acct_1", { required: 3 }));
