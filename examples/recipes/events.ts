// README "Events": a low-balance email at 80% of the allowance, and an auto-top-up of 500
// credits when 100 or fewer are left, granted once per crossing however often its event is
// delivered. `REDIS_URL=redis://... npm run example examples/recipes/events.ts`
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "redis";
import { createTollgate, fromNodeRedis, type DeliveredEvent } from "tollgate";

const client = await createClient({ url: process.env.REDIS_URL }).on("error", (error) => console.error(error)).connect();
const tollgate = createTollgate({
  redis: fromNodeRedis(client),
  prefix: `events-${Date.now()}`,
  plans: {
    pro: {
      limits: { api: [{ limit: 600, windowMs: 60_000 }] },
      credits: { allowance: 1_000, cycle: { months: 1 } },
      holds: { cap: 5, maxItems: 100, surfaces: ["api"] },
      // credits.threshold fires when 80% of the cycle's credits are used, and when 100 or fewer are left.
      events: { thresholds: [{ usedPercent: 80 }, { below: 100 }] },
    },
  },
});
const sendEmail = async (to: string, text: string) => console.log(`email to ${to}: ${text}`); // stands in for your mailer

async function lowBalanceEmail(event: DeliveredEvent) {
  if (event.type !== "credits.threshold" || !("usedPercent" in event.data.threshold)) return;
  await sendEmail(event.subject, `${event.data.threshold.usedPercent}% of your credits are used, ${event.data.available} left`);
}

async function autoTopUp(event: DeliveredEvent) {
  if (event.type !== "credits.threshold" || !("below" in event.data.threshold)) return;
  // The operation id is the event's: if this process dies after the grant, the event comes again and grants nothing twice.
  const topUp = await tollgate.credits.grant(event.subject, { amount: 500, reason: "auto top-up", operationId: `top-up:${event.id}` });
  console.log("top-up", topUp.ok && topUp.grantId, topUp.ok && topUp.replayed);
}

// Each group gets every event, at least once: a handler that throws gets it again later (event.attempt counts).
const stop = new AbortController();
const consumers = [
  tollgate.events.consume({ group: "emails", handler: lowBalanceEmail, signal: stop.signal }),
  tollgate.events.consume({ group: "top-ups", handler: autoTopUp, signal: stop.signal }),
];

await tollgate.accounts.create("acct_9", { plan: "pro" });
await tollgate.credits.charge("acct_9", { required: 850 }); // 80% used: the email
await tollgate.credits.charge("acct_9", { required: 60 }); // 90 left: a top-up

// A server consumes until it stops; this script stops once every group has handled every event.
while ((await tollgate.events.stats()).pendingSubjects > 0) await sleep(50);
stop.abort();
await Promise.all(consumers);
console.log((await tollgate.usage("acct_9")).credits.available); // 590
await client.quit();
