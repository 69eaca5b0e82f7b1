// docs/limits.md#plan-edits: a raised limit reaches an existing account. `npx tsx examples/recipes/planEdit.ts`
import { createClient } from "redis";
import { createTollgate, fromNodeRedis, type Plan } from "tollgate";

const client = await createClient({ url: process.env.REDIS_URL }).on("error", (error) => console.error(error)).connect();
const pro = (limit: number): Plan => ({ limits: { api: [{ limit, windowMs: 60_000 }] }, credits: { allowance: 1_000, cycle: { months: 1 } }, holds: { cap: 1, maxItems: 10, surfaces: ["api"] } });
const prefix = `plan-edit-${Date.now()}`;

// Yesterday's deploy: pro allows 5 requests a minute.
const before = createTollgate({ redis: fromNodeRedis(client), prefix, plans: { pro: pro(5) }, plansVersion: 1 });
await before.accounts.create("acct_7", { plan: "pro" });
await before.limits.admit("acct_7");

// Today's deploy: 500 a minute, plansVersion 2.
const after = createTollgate({ redis: fromNodeRedis(client), prefix, plans: { pro: pro(500) }, plansVersion: 2 });
const { rateLimit } = await after.limits.admit("acct_7");
console.log(rateLimit.limit, rateLimit.remaining); // 500 498: the count is kept
await client.quit();
