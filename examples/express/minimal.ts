// The smallest Express server on tollgate, to copy: API keys, 5 requests a minute and credits.
// `REDIS_URL=redis://... npm run example examples/express/minimal.ts`
import express from "express";
import { createClient } from "redis";
import { createTollgate, fromNodeRedis } from "tollgate";
import { rateLimit } from "tollgate/express";

const client = await createClient({ url: process.env.REDIS_URL }).on("error", (error) => console.error(error)).connect();
const tollgate = createTollgate({
  redis: fromNodeRedis(client),
  plans: { basic: { limits: { api: [{ limit: 5, windowMs: 60_000 }] }, credits: { allowance: 10, cycle: { months: 1 } }, holds: { cap: 1, maxItems: 100, surfaces: ["api"] } } },
});
const key = (req: express.Request) => req.get("x-api-key") ?? null;

const app = express();
// The key checked and the request counted in one round trip: 401 or 429 here, or on with the headers.
app.get("/hello", rateLimit({ tollgate, key }), (_req, res) => {
  res.json({ hello: res.locals.tollgate!.subject });
});
// 1 credit looked for in the same round trip (402 when short), and charged once the work is done.
app.get("/report", rateLimit({ tollgate, key, credits: 1 }), async (_req, res) => {
  const charge = await tollgate.credits.charge(res.locals.tollgate!.subject, { required: 1 });
  res.json({ report: "...", charge });
});

// A demo account and its API key, to try the server at once.
const account = `acct_${Date.now()}`;
await tollgate.accounts.create(account, { plan: "basic" });
const demo = await tollgate.keys.issue(account);
const server = app.listen(Number(process.env.PORT ?? 3000), () => {
  const url = `http://localhost:${(server.address() as { port: number }).port}`;
  console.log(`listening on ${url}\ntry: curl -i -H "x-api-key: ${demo.key}" ${url}/hello`);
});
