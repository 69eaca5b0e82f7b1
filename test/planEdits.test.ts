// Plan edits reach every account (docs/limits.md, "Plan edits"): when the host's plan table
// changes, an account takes its plan's new numbers at its next admit, atomically, with its
// counts kept; one extra round trip at most once per account per change. With plansVersion an
// older table never moves an account back (a rolling deploy). On both clients; the memory
// tollgate has one table for its whole life, so there is no edit to reach it (skipped there).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectTestClient, CLIENT_KINDS, TEST_START, ManualClock, accountId, type TestClient } from './helpers/tollgate.ts';
import { recording } from './helpers/recording.ts';
import { uniquePrefix } from './helpers/redis.ts';
import { createTollgate, type Plan, type PlanTable } from '../src/index.ts';

const plan = (limit: number, allowance: number, cap = 1): Plan => ({
  limits: { api: [{ limit, windowMs: 60_000 }] },
  credits: { allowance, cycle: { days: 30 } },
  holds: { cap, maxItems: 10, surfaces: ['api'] },
});
const OLD: PlanTable = { pro: plan(5, 100), gone: plan(7, 10) };
const NEW: PlanTable = { pro: plan(500, 1_000, 3) };

describe.each(CLIENT_KINDS)('plan edits on %s', (kind) => {
  let client: TestClient;
  const clock = new ManualClock(TEST_START + 15_000);
  let prefix: string;
  beforeAll(async () => {
    client = await connectTestClient(kind);
    prefix = uniquePrefix('planEdits');
  });
  afterAll(() => client.close());
  const server = (plans: PlanTable, plansVersion?: number) => {
    const recorder = recording(client.adapter);
    const tg = createTollgate({ redis: recorder.client, prefix, clock: clock.fn, plans, ...(plansVersion === undefined ? {} : { plansVersion }) });
    return { tg, recorder };
  };

  it('the next admit takes the new numbers, keeps the counts, and costs one more round trip once', async () => {
    const old = server(OLD, 1);
    const id = accountId();
    await old.tg.accounts.create(id, { plan: 'pro' });
    for (let i = 0; i < 3; i++) await old.tg.limits.admit(id);
    const next = server(NEW, 2);
    expect(await next.tg.limits.admit(id)).toMatchObject({ allowed: true, rateLimit: { limit: 500, remaining: 496 } });
    expect(next.recorder.calls.map((c) => c.script)).toEqual(['admit', 'changePlan', 'admit']);
    next.recorder.clear();
    await next.tg.limits.admit(id);
    expect(next.recorder.calls.map((c) => c.script)).toEqual(['admit']);
    // Holds rules at once; the allowance from the next cycle, as changePlan does.
    expect(await next.tg.accounts.limits(id)).toMatchObject({ holds: { cap: 3 }, credits: { allowance: 1_000 } });
    expect((await next.tg.usage(id)).credits).toMatchObject({ allowance: 100, nextAllowance: 1_000 });
  });

  it('a rolling deploy: a server with the older version never moves the account back', async () => {
    const old = server(OLD, 1);
    const id = accountId();
    await old.tg.accounts.create(id, { plan: 'pro' });
    const next = server(NEW, 2);
    await next.tg.limits.admit(id);
    old.recorder.clear();
    expect(await old.tg.limits.admit(id)).toMatchObject({ rateLimit: { limit: 500 } });
    expect(old.recorder.calls.map((c) => c.script)).toEqual(['admit']);
  });

  it('keys.verify and peek refresh too; without a version, a different table refreshes', async () => {
    const old = server(OLD);
    const id = accountId();
    await old.tg.accounts.create(id, { plan: 'pro' });
    const { key } = await old.tg.keys.issue(id);
    const next = server(NEW);
    const check = await next.tg.keys.verify(key);
    expect(check).toMatchObject({ valid: true, admission: { rateLimit: { limit: 500 } } });
    const other = accountId();
    await old.tg.accounts.create(other, { plan: 'pro' });
    expect((await next.tg.limits.peek(other)).rateLimit.limit).toBe(500);
  });

  it('an account whose plan has left the table keeps its numbers and is not asked again', async () => {
    const old = server(OLD, 1);
    const id = accountId();
    await old.tg.accounts.create(id, { plan: 'gone' });
    const next = server(NEW, 2);
    expect(await next.tg.limits.admit(id)).toMatchObject({ allowed: true, rateLimit: { limit: 7 } });
    next.recorder.clear();
    await next.tg.limits.admit(id);
    expect(next.recorder.calls.map((c) => c.script)).toEqual(['admit']);
  });
});
