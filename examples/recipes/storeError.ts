// docs/reliability.md#when-redis-is-down: a free read endpoint that stays up on this process's limits,
// a charged one that fails closed. The block the page shows ends at the first blank line
// after `onStoreError`; the rest stops the client and tries both.
// `REDIS_URL=redis://... npm run example examples/recipes/storeError.ts`; test/readme.test.ts runs it.
import { Hono } from "hono";
import { createClient } from "redis";
import { createTollgate, fromNodeRedis } from "tollgate";
import { rateLimit } from "tollgate/hono";

const client = await createClient({ url: process.env.REDIS_URL, disableOfflineQueue: true }).on("error", () => {}).connect();
const plans = { starter: { limits: { api: [{ limit: 100, windowMs: 60_000 }] }, credits: { allowance: 1_000, cycle: { months: 1 } }, holds: { cap: 2, maxItems: 100, surfaces: ["api"] } } };
const tollgate = createTollgate({ redis: fromNodeRedis(client), plans });
const key = (c: { req: { header(name: string): string | undefined } }) => c.req.header("x-api-key") ?? null;
const app = new Hono();
// 4 app servers: while Redis is down, each lets a subject use a quarter of its plan's windows.
app.use("/search", rateLimit({ tollgate, key, onStoreError: "local", instances: 4 }));
// Anything that takes or pre-checks credits fails closed (503) whatever onStoreError says.
app.use("/reports/*", rateLimit({ tollgate, key, credits: 1, onStoreError: "open" }));
app.get("/search", (c) => c.json({ degraded: c.get("tollgate").degraded ?? null }));
app.get("/reports/:id", (c) => c.json({ id: c.req.param("id") }));

const account = `acct_${Date.now()}`;
await tollgate.accounts.create(account, { plan: "starter" });
const { key: apiKey } = await tollgate.keys.issue(account);
const headers = { "x-api-key": apiKey };
await app.request("/search", { headers }); // the store answers: the starter plan's windows are seen
await client.quit(); // Redis out of reach
const search = await app.request("/search", { headers });
console.log(search.status, search.headers.get("x-ratelimit-limit"), await search.json()); // 200 25 { degraded: 'local' }
console.log((await app.request("/reports/1", { headers })).status); // 503
