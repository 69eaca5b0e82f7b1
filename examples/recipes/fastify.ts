// docs/http.md#fastify: the plugin on a Fastify app, tried with one request (app.inject).
// `REDIS_URL=redis://... npm run example examples/recipes/fastify.ts`; test/readme.test.ts runs it.
import Fastify from "fastify";
import { createClient } from "redis";
import { createTollgate, fromNodeRedis } from "tollgate";
import { rateLimit } from "tollgate/fastify";

const client = await createClient({ url: process.env.REDIS_URL }).on("error", (error) => console.error(error)).connect();
const plans = { starter: { limits: { api: [{ limit: 100, windowMs: 60_000 }] }, credits: { allowance: 1_000, cycle: { months: 1 } }, holds: { cap: 2, maxItems: 100, surfaces: ["api"] } } };
const tollgate = createTollgate({ redis: fromNodeRedis(client), plans });
const app = Fastify();
// Every route of this scope added after it: the key checked and the request counted.
await app.register(rateLimit, { tollgate, key: (request) => request.headers["x-api-key"]?.toString() ?? null });
app.get("/search", async (request) => ({ account: request.tollgate!.subject }));
// A route's own options: this one also looks for 1 credit.
app.get("/reports/:id", { config: { rateLimit: { credits: 1 } } }, async (request) => ({ account: request.tollgate!.subject }));

const account = `acct_${Date.now()}`;
await tollgate.accounts.create(account, { plan: "starter" });
const { key } = await tollgate.keys.issue(account);
const reply = await app.inject({ url: "/reports/1", headers: { "x-api-key": key } });
console.log(reply.statusCode, reply.headers["x-ratelimit-remaining"]); // 200 99
await app.close();
await client.quit();
