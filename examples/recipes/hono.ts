// docs/http.md#hono: the middleware on a Hono app, tried with one request (app.request).
// `REDIS_URL=redis://... npm run example examples/recipes/hono.ts`; test/readme.test.ts runs it.
import { Hono } from "hono";
import { createClient } from "redis";
import { createTollgate, fromNodeRedis } from "tollgate";
import { rateLimit } from "tollgate/hono";

const client = await createClient({ url: process.env.REDIS_URL }).on("error", (error) => console.error(error)).connect();
const plans = { starter: { limits: { api: [{ limit: 100, windowMs: 60_000 }] }, credits: { allowance: 1_000, cycle: { months: 1 } }, holds: { cap: 2, maxItems: 100, surfaces: ["api"] } } };
const tollgate = createTollgate({ redis: fromNodeRedis(client), plans });
const app = new Hono();
app.use("/api/*", rateLimit({ tollgate, key: (c) => c.req.header("x-api-key") ?? null, credits: 1 }));
app.get("/api/reports/:id", (c) => c.json({ account: c.get("tollgate").subject }));
// On Node: serve({ fetch: app.fetch, port: 3000 }) from @hono/node-server.

const account = `acct_${Date.now()}`;
await tollgate.accounts.create(account, { plan: "starter" });
const { key } = await tollgate.keys.issue(account);
const response = await app.request("/api/reports/1", { headers: { "x-api-key": key } });
console.log(response.status, response.headers.get("x-ratelimit-remaining")); // 200 99
await client.quit();
