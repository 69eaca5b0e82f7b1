// SPEC §1-2 on a Redis Cluster: every script touches the keys of one account only, so all of
// them hash to that account's slot (jobs, operation ids, Idempotency-Key records and the
// journal included); the deployment-wide sweep index is the one other key and is touched alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, type RedisScriptClient, type Tollgate } from '../../src/index.ts';
import { accountKeys, sweepIndexKey } from '../../src/keys.ts';
import { SCRIPTS } from '../../src/scripts/bundle.generated.ts';
import { uniquePrefix } from '../helpers/redis.ts';
import { CLIENT_KINDS, ManualClock, accountId, connectTestClient, type TestClient } from '../helpers/tollgate.ts';

const DAY = 86_400_000;
const LEASE = 60_000;

type ScriptName = keyof typeof SCRIPTS;
interface Call {
  script: ScriptName;
  keys: string[];
}

const bySha = new Map(Object.entries(SCRIPTS).map(([name, s]) => [s.sha1, name as ScriptName]));
const bySource = new Map(Object.entries(SCRIPTS).map(([name, s]) => [s.source, name as ScriptName]));

/** Passes every call through and notes which script ran with which keys. */
function recording(inner: RedisScriptClient, calls: Call[]): RedisScriptClient {
  return {
    evalsha(sha1, keys, args) {
      calls.push({ script: bySha.get(sha1)!, keys });
      return inner.evalsha(sha1, keys, args);
    },
    eval(source, keys, args) {
      calls.push({ script: bySource.get(source)!, keys });
      return inner.eval(source, keys, args);
    },
  };
}

/** Uses every operation of the library on one account, so every script runs at least once. */
async function wholeLife(tg: Tollgate, clock: ManualClock, id: string): Promise<void> {
  await tg.accounts.create(id, { plan: 'pro' });
  await tg.limits.admit(id, { surface: 'api', credits: 1 });
  await tg.limits.admit(id, { surface: 'web' });
  await tg.credits.charge(id, { required: 1, optional: 1, operationId: 'req_1:transcript' });
  await tg.credits.charge(id, { required: 1, operationId: 'req_1:transcript' });
  await tg.credits.charge(id, { required: 1 });

  const claim = await tg.idempotency.begin(id, 'key-1', { video_ids: ['a', 'b'] });
  if (claim.state !== 'new') throw new Error(`begin: ${claim.state}`);
  const bulk = await tg.jobs.reserve(id, { videos: 3, includeComments: true, idempotency: claim.claim });
  if (!bulk.ok) throw new Error(`reserve: ${bulk.reason}`);
  expect((await tg.idempotency.begin(id, 'key-1', { video_ids: ['a', 'b'] })).state).toBe('replay');
  const refused = await tg.idempotency.begin(id, 'key-2', { bad: true });
  if (refused.state === 'new') await tg.idempotency.release(id, refused.claim);

  await tg.jobs.recordResult(id, bulk.job.id, { transcript: 'delivered', commentPage: 'nonempty' });
  await tg.jobs.recordResult(id, bulk.job.id, { transcript: 'no_captions' });
  await tg.jobs.get(id, bulk.job.id);
  await tg.jobs.cancel(id, bulk.job.id);

  const collection = await tg.jobs.reserveCollection(id, { limit: 5, idempotency: { key: 'key-3', body: { limit: 5 } } });
  if (!collection.ok) throw new Error(`collection: ${collection.reason}`);
  await tg.jobs.recordPage(id, collection.job.id, 'nonempty');
  await tg.jobs.finish(id, collection.job.id);

  // A job whose worker stops reporting, reclaimed by both sweeps.
  const lapsed = await tg.jobs.reserve(id, { videos: 2 });
  if (!lapsed.ok) throw new Error(`reserve: ${lapsed.reason}`);
  clock.advance(LEASE + 1);
  await tg.jobs.sweep();
  await tg.jobs.sweepAccount(id);
  await tg.jobs.list(id);

  await tg.usage(id);
  await tg.credits.reconcile(id);
  await tg.accounts.changePlan(id, 'business');
  await tg.accounts.startCycle(id);
  clock.advance(40 * DAY);
  await tg.credits.charge(id, { required: 1 });
  await tg.accounts.endedCycles(id);
  await tg.accounts.inspect(id);
  // Left open, so the active-jobs set exists when the stored keys are listed.
  expect((await tg.jobs.reserve(id, { videos: 1 })).ok).toBe(true);
}

describe.each(CLIENT_KINDS)('one account, one hash slot, through a %s cluster client', (kind) => {
  let client: TestClient;
  beforeAll(async () => {
    client = await connectTestClient(kind);
    expect(client.topology).toBe('cluster');
  });
  afterAll(() => client?.close());

  const slotOf = async (key: string) => Number(await client.command(['CLUSTER', 'KEYSLOT', key]));

  it("every script's keys hash to the account's slot; only the sweep index is elsewhere, and alone", async () => {
    const calls: Call[] = [];
    const clock = new ManualClock();
    const prefix = uniquePrefix('slots');
    const tg = createTollgate({ redis: recording(client.adapter, calls), prefix, clock: clock.fn, leaseMs: LEASE });
    const id = accountId('slots');
    await wholeLife(tg, clock, id);

    // Every script of the library ran, so no script escapes the check below.
    expect(new Set(calls.map((c) => c.script))).toEqual(new Set(Object.keys(SCRIPTS)));

    const accountSlot = await slotOf(id);
    const sweepIndex = sweepIndexKey(prefix);
    for (const { script, keys } of calls) {
      if (script === 'dueSweeps' || script === 'sweepHint') {
        expect(keys, script).toEqual([sweepIndex]);
        continue;
      }
      expect(keys.length, script).toBeGreaterThan(0);
      for (const key of keys) {
        expect(key, script).toContain(`{${id}}`);
        expect(await slotOf(key), `${script}: ${key}`).toBe(accountSlot);
      }
    }
  });

  it('every key the library wrote for the account is stored in its slot, on the node that owns it', async () => {
    const clock = new ManualClock();
    const prefix = uniquePrefix('stored');
    const tg = createTollgate({ redis: client.adapter, prefix, clock: clock.fn, leaseMs: LEASE });
    const id = accountId('stored');
    await wholeLife(tg, clock, id);

    // KEYS goes to every master; a key is only ever stored on the master of its slot.
    const stored = (await client.command(['KEYS', `${prefix}:*`])) as string[];
    const own = stored.filter((key) => key !== sweepIndexKey(prefix));
    const keys = accountKeys(prefix, id);
    const base = keys.account.slice(0, -1);
    // Account hash, cycle summaries, journal, active jobs, job list, job hashes, operation ids,
    // Idempotency-Key records, request counters: all written, all tagged.
    const kinds = new Set(own.map((key) => key.slice(base.length).split(':')[0]));
    expect(kinds).toEqual(new Set(['a', 'cy', 'jn', 'ja', 'jl', 'j', 'op', 'ik', 'rl']));
    const accountSlot = await slotOf(id);
    for (const key of own) {
      expect(key.startsWith(base), key).toBe(true);
      expect(await slotOf(key), key).toBe(accountSlot);
      // Routed by key, so the command reaches the slot's owner or fails with MOVED.
      expect(await client.command(['EXISTS', key]), key).toBe(1);
    }
    // Names built for any job, operation or key land there too.
    for (const key of [keys.job('job_x'), keys.operation('req_9:comments'), keys.idempotency('Any key ~!@#$%^&*()'), keys.jobPrefix, `${keys.counters('web')}29474679`]) {
      expect(await slotOf(key), key).toBe(accountSlot);
    }
  });
});
