// README "Grants and top-ups": a top-up pack, a promotion that expires, and a support refund
// that goes back to the grant that paid. `REDIS_URL=redis://... npm run example examples/recipes/grants.ts`
import { createClient } from "redis";
import { createTollgate, fromNodeRedis } from "tollgate";

const client = await createClient({ url: process.env.REDIS_URL }).on("error", (error) => console.error(error)).connect();
const tollgate = createTollgate({
  redis: fromNodeRedis(client),
  plans: { starter: { limits: { api: [{ limit: 100, windowMs: 60_000 }] }, credits: { allowance: 1_000, cycle: { months: 1 } }, holds: { cap: 2, maxItems: 100, surfaces: ["api"] } } },
});
const account = `acct_${Date.now()}`;
await tollgate.accounts.create(account, { plan: "starter" });

// A customer buys a 10,000-credit top-up pack: paid credits that never expire, spent after the plan's.
await tollgate.credits.grant(account, { amount: 10_000, kind: "paid", reason: "Top-up pack", operationId: "order_1001" });
// A promotion of 500 credits for 14 days: it expires first, so it is spent first.
const expiresAt = Date.now() + 14 * 86_400_000;
await tollgate.credits.grant(account, { amount: 500, kind: "promotional", expiresAt, reason: "Welcome offer", operationId: "promo_welcome" });

const charge = await tollgate.credits.charge(account, { required: 20, operationId: "req_8f3a" });
console.log(charge.ok && charge.sources); // [ { grantId: 'g2', amount: 20 } ]: the promotion paid

// Support refunds the failed request by its operation id: the credits go back to the grant that paid.
const refund = await tollgate.credits.refund(account, { charge: "req_8f3a", reason: "Export failed", operationId: "ticket_4411" });
console.log(refund); // { ok: true, refunded: 20, sources: [ { grantId: 'g2', amount: 20 } ], replayed: false }
console.log((await tollgate.usage(account)).credits.available); // 11500: the cycle's 1,000, the pack's 10,000, the promotion's 500
await client.quit();
