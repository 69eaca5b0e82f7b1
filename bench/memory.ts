// Redis memory of an idle account and of an ended hold, by used_memory on a private redis-server:
// node --experimental-transform-types bench/memory.ts
import { createClient } from 'redis';
import { createTollgate, fromNodeRedis } from '../src/index.ts';
import { startRedisServer } from '../test/helpers/redisServer.ts';
import { EXAMPLE_PLANS } from '../examples/shared/plans.ts';

const server = await startRedisServer();
const client = createClient({ url: server.url });
await client.connect();
let now = Date.UTC(2026, 0, 15, 12);
const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: fromNodeRedis(client), prefix: 'm', clock: () => now, leaseMs: 60_000 });
const used = async () => {
  const info = await client.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)![1]);
};
const N = 2000;
let before = await used();
for (let i = 0; i < N; i++) {
  await tg.accounts.create(`acct_${i}`, { plan: 'pro' });
  await tg.limits.admit(`acct_${i}`, { surface: 'api' });
}
now += 3 * 3600_000; // windows lapse
const idle = ((await used()) - before) / N;
const sample = await client.sendCommand(['MEMORY', 'USAGE', 'm:{acct_1}:a']);
console.log(`idle account (created + one admit, windows lapsed): ${idle.toFixed(0)} B/account by used_memory; account hash MEMORY USAGE ${sample}`);
const id = 'acct_h';
await tg.accounts.create(id, { plan: 'business' });
await tg.credits.charge(id, { required: 1 });
before = await used();
const H = 1000;
for (let i = 0; i < H; i++) {
  const o = await tg.holds.open(id, { items: 2, perItem: { required: 1 } });
  if (!o.ok) throw new Error(JSON.stringify(o));
  await tg.holds.settle(id, o.hold.id, { itemId: 'a' });
  await tg.holds.finish(id, o.hold.id);
}
const perHold = ((await used()) - before) / H;
const [held] = (await tg.holds.list(id, { limit: 1 })).holds;
const holdKey = `m:{${id}}:h:${held!.id}`;
console.log(
  `ended hold (2 items, 1 settled, finished): ${perHold.toFixed(0)} B/hold by used_memory; its hash MEMORY USAGE ${await client.sendCommand(['MEMORY', 'USAGE', holdKey])}`,
);
console.log(JSON.stringify(await client.hGetAll(holdKey)));
await client.quit();
await server.stop();
