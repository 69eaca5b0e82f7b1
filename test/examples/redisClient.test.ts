// The example servers' own Redis client (examples/shared/redis/client.ts): every call has one deadline
// of ours and nothing else. node-redis 6 would arm a 5 s AbortSignal.timeout per command, whose
// timer outlives the reply: under load, thousands of them filled the old generation and the
// servers' RSS climbed (test/soak/serverMemory.test.ts has the figures).
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { connectRedis, type AppRedis } from '../../examples/shared/redis/client.ts';
import { createTollgate } from '../../src/index.ts';
import { redisUrl, uniquePrefix } from '../helpers/redis.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

let app: AppRedis;
beforeAll(async () => {
  app = await connectRedis({ url: redisUrl() }, 2_000);
});
afterAll(async () => {
  await app?.close();
});

it('commands, MULTI and tollgate scripts on the example client arm no timer of their own per command', async () => {
  const prefix = uniquePrefix('client');
  const tollgate = createTollgate({ plans: EXAMPLE_PLANS, redis: app.scripts, prefix });
  await tollgate.accounts.create('acct_timers', { plan: 'pro' });
  const timeout = vi.spyOn(AbortSignal, 'timeout');
  try {
    for (let i = 0; i < 50; i++) {
      await app.set(`${prefix}:k${i}`, 'v', { PX: 60_000 });
      await app.get(`${prefix}:k${i}`);
      await app.hGetAll(`${prefix}:h`);
      await app.atomically([
        ['SET', `${prefix}:m`, String(i)],
        ['EXPIRE', `${prefix}:m`, '60'],
      ]);
      await tollgate.limits.admit('acct_timers', { credits: 1 });
    }
    expect(timeout).not.toHaveBeenCalled();
  } finally {
    timeout.mockRestore();
  }
});
