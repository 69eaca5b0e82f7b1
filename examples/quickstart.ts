// The quick start of README.md, the same code: `REDIS_URL=redis://... npm run example examples/quickstart.ts`.
// test/package.test.ts runs it from the packed package (ESM, CommonJS, TypeScript nodenext and
// bundler) and test/peers/ on the lowest and highest node-redis the peer range allows.
import { createClient } from "redis";
import { createTollgate, fromNodeRedis } from "tollgate";
const client = await createClient({ url: process.env.REDIS_URL }).on("error", (error) => console.error(error)).connect();
const plans = { starter: { limits: { api: [{ limit: 100, windowMs: 60_000 }] }, credits: { allowance: 1_000, cycle: { months: 1 } }, holds: { cap: 2, maxItems: 100, surfaces: ["api"] } } };
const tollgate = createTollgate({ redis: fromNodeRedis(client), plans });

// Once per customer: an account on a plan, and an API key shown to them once.
const account = `acct_${Date.now()}`;
await tollgate.accounts.create(account, { plan: "starter" }); // 100 requests/min, 1,000 credits/month
const { key } = await tollgate.keys.issue(account);

// Per request: the key checked, the request counted and 1 credit looked for, in one round trip.
const check = await tollgate.keys.verify(key, { credits: 1 });
if (!check.ok) console.log("401: unknown key");
else if (!check.admission.ok) console.log(`429: retry in ${check.admission.retryAfterMs} ms`);
else if (!check.admission.credits?.sufficient) console.log("402: out of credits");
else {
  // ...do the work, then charge for it (the operation id makes a retried charge apply once).
  const charge = await tollgate.credits.charge(check.subject, { required: 1, operationId: "req_1" });
  console.log(charge); // { ok: true, charged: 1, balance: 999, available: 999, sources: [ { grantId: 'cycle:1', amount: 1 } ], replayed: false }
}
await client.quit();
