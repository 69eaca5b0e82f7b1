// README "Holds": an LLM API that reserves a request's max tokens upfront and settles the
// tokens used; what was not used goes back to the cycle that paid.
// `REDIS_URL=redis://... npm run example examples/recipes/llm.ts`
import { createClient } from "redis";
import { createTollgate, fromNodeRedis } from "tollgate";

const client = await createClient({ url: process.env.REDIS_URL }).on("error", (error) => console.error(error)).connect();
const tollgate = createTollgate({
  redis: fromNodeRedis(client),
  plans: { team: { limits: { api: [{ limit: 600, windowMs: 60_000 }] }, credits: { allowance: 1_000_000, cycle: { months: 1 } }, holds: { cap: 20, maxItems: 1, surfaces: ["api"] } } },
});
const account = `acct_${Date.now()}`;
await tollgate.accounts.create(account, { plan: "team" });

// A completion may use up to 4,096 tokens: hold them all, so two requests cannot spend the same credits.
const held = await tollgate.holds.open(account, { items: 1, perItem: { required: 0, optional: 4_096 }, leaseMs: 60_000 });
if (!held.ok) throw new Error(held.reason); // insufficient, hold_limit_reached, ...
const runModel = async () => 1_234; // stands in for the model: it reports the tokens it used
// A long completion may outlive the lease: renew it while the model runs, or the hold lapses and is refunded whole.
const renewing = setInterval(() => void tollgate.holds.renew(account, held.hold.id), 20_000);
const used = await runModel().finally(() => clearInterval(renewing));
const settled = await tollgate.holds.settle(account, held.hold.id, { itemId: "completion", optionalSpent: used });
console.log(settled.hold.spent, settled.hold.refunded); // 1234 2862: the hold ended with its refund
console.log((await tollgate.usage(account)).credits); // balance 998766, spent 1234, held 0
await client.quit();
