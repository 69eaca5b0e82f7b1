// docs/limits.md#limits-for-any-subject: a policy for callers without an account (sign-in attempts
// per IP), and a plan whose surface has two windows. `REDIS_URL=redis://... npm run example examples/recipes/limits.ts`
import { createClient } from "redis";
import { createTollgate, fromNodeRedis } from "tollgate";

const client = await createClient({ url: process.env.REDIS_URL }).on("error", (error) => console.error(error)).connect();
const tollgate = createTollgate({
  redis: fromNodeRedis(client),
  // 5 sign-in attempts per IP a minute, and 20 an hour; no account needed.
  policies: { signIn: { attempts: [{ limit: 5, windowMs: 60_000 }, { limit: 20, windowMs: 3_600_000 }] } },
  // A burst limit under the minute budget: 10 a second, 300 a minute (sliding).
  plans: {
    pro: {
      limits: { api: [{ limit: 10, windowMs: 1_000 }, { limit: 300, windowMs: 60_000, algorithm: "sliding" }] },
      credits: { allowance: 5_000, cycle: { months: 1 } },
      holds: { cap: 5, maxItems: 100, surfaces: ["api"] },
    },
  },
});

const ip = `ip:203.0.113.${Date.now() % 250}`;
for (let i = 1; i <= 6; i++) {
  const attempt = await tollgate.limits.admit(ip, { policy: "signIn", surface: "attempts" });
  console.log(i, attempt.ok ? "try the password" : `429, retry in ${Math.ceil(attempt.retryAfterMs! / 1000)} s`);
}

const account = `acct_${Date.now()}`;
await tollgate.accounts.create(account, { plan: "pro" });
const search = await tollgate.limits.admit(account, { cost: 4 }); // an expensive endpoint counts 4
console.log(search.windows.map((w) => `${w.remaining}/${w.limit} per ${w.windowMs / 1000} s`).join(", "));
await client.quit();
