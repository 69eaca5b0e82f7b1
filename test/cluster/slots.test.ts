// Subjects and slots on a Redis Cluster: every script touches the keys of one subject only, so all
// of them hash to that subject's slot (holds, operation ids, Idempotency-Key records, API keys,
// window counters and the journal included, and a policy subject's counters without an
// account); the deployment-wide sweep index is the one other key and is touched alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, type Tollgate } from '../../src/index.ts';
import { SubjectKeys, sweepIndexKey } from '../../src/redisKeys.ts';
import { LIBRARY } from '../../src/scripts/bundle.generated.ts';
import { startRedisCluster, type RedisClusterHandle } from '../helpers/cluster.ts';
import { SCRIPTS, recording, type SentCommand } from '../helpers/recording.ts';
import { uniquePrefix } from '../helpers/redis.ts';
import { rawCommand } from '../helpers/redisServer.ts';
import { CLIENT_KINDS, ManualClock, accountId, clusterNodes, connectTestClient, type TestClient } from '../helpers/tollgate.ts';
import net from 'node:net';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

/** One MONITOR line: the connection (or "lua" for a command a script ran) and the words. */
interface Monitored {
  source: string;
  words: string[];
}

/** Reads a MONITOR line's quoted words ("SET" "k" "v"), with Redis's escapes. */
function monitoredWords(text: string): string[] {
  const words: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"/g;
  for (const m of text.matchAll(re)) {
    words.push(
      m[1]!.replace(/\\x([0-9a-f]{2})|\\(.)/g, (_, hex: string | undefined, ch: string | undefined) =>
        hex ? String.fromCharCode(parseInt(hex, 16)) : ch === 'n' ? '\n' : ch === 'r' ? '\r' : ch === 't' ? '\t' : ch!,
      ),
    );
  }
  return words;
}

/** MONITOR on every master: every command each one runs, scripts' own commands included. */
async function monitorAll(ports: number[]): Promise<{ lines: Monitored[][]; stop: () => void }> {
  const lines: Monitored[][] = ports.map(() => []);
  const sockets = await Promise.all(
    ports.map(
      (port, i) =>
        new Promise<net.Socket>((resolve) => {
          const socket = net.connect({ host: '127.0.0.1', port }, () => {
            socket.write('MONITOR\r\n');
            resolve(socket);
          });
          let buffer = '';
          socket.on('data', (chunk) => {
            buffer += chunk.toString('latin1');
            let end: number;
            while ((end = buffer.indexOf('\r\n')) >= 0) {
              const line = buffer.slice(0, end);
              buffer = buffer.slice(end + 2);
              const m = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
              if (m) lines[i]!.push({ source: m[1]!, words: monitoredWords(m[2]!) });
            }
          });
        }),
    ),
  );
  return {
    lines,
    stop: () => {
      for (const socket of sockets) socket.destroy();
    },
  };
}

const DAY = 86_400_000;
const LEASE = 60_000;
const POLICIES = {
  anonymous: {
    api: [
      { limit: 5, windowMs: 10_000 },
      { limit: 20, windowMs: 60_000, algorithm: 'sliding' as const },
    ],
  },
};
const INDEX_SCRIPTS = new Set(['sweepDue', 'sweepMark']);
/** The events' deployment-wide scripts (docs/events.md#delivery): their keys share one slot of their own. */
const EVENTS_INDEX_SCRIPTS = new Set(['eventsDead', 'eventsForget', 'eventsGroup', 'eventsNotify', 'eventsPending', 'eventsStats']);

/** Uses every operation of the library on one account, so every script runs at least once. */
async function wholeLife(tg: Tollgate, clock: ManualClock, id: string): Promise<void> {
  const must = <T extends { ok?: boolean; valid?: boolean }>(what: string, value: T): T => {
    if (value.ok === false || value.valid === false) throw new Error(`${what}: ${JSON.stringify(value)}`);
    return value;
  };
  await tg.accounts.create(id, { plan: 'pro' });
  await tg.accounts.limits(id);
  await tg.limits.admit(id, { surface: 'api', credits: 1 });
  await tg.limits.admit(id, { surface: 'web', cost: 2 });
  await tg.limits.peek(id);
  await tg.limits.reset(id, { surface: 'web' });
  await tg.limits.override(id, { surface: 'web', windows: [{ limit: 100, windowMs: 60_000 }] });
  expect(await tg.limits.overrides(id)).toHaveLength(1);
  // A lease no place is held under (released already, or run out): nothing to free.
  expect(await tg.limits.release(id, '1:api:')).toBe(false);
  // The same subject limited by a policy: its counters live in its slot too.
  await tg.limits.admit(id, { policy: 'anonymous' });

  const { key, keyId } = await tg.keys.issue(id, { name: 'ci' });
  const session = await tg.keys.issue(id, { ttlMs: 3_600_000, surfaces: ['web'] });
  must('verify', await tg.keys.verify(key, { credits: 1 }));
  must('verify usage', await tg.keys.verify(session.key, { surface: 'web', usage: true }));
  await tg.keys.list(id);
  await tg.keys.revoke(id, keyId);

  must('charge', await tg.credits.charge(id, { required: 1, optional: 1, operationId: 'req_1:transcript' }));
  must('charge', await tg.credits.charge(id, { required: 1, optional: 1, operationId: 'req_1:transcript' }));
  must('charge', await tg.credits.charge(id, { required: 1 }));

  const claim = await tg.idempotency.begin(id, 'key-1', { video_ids: ['a', 'b', 'c'] });
  if (claim.state !== 'new') throw new Error(`begin: ${claim.state}`);
  const items = must('open', await tg.holds.open(id, { items: 3, perItem: { required: 1, optional: 1 }, idempotency: claim.claim }));
  if (!items.ok) throw new Error('unreachable');
  expect((await tg.idempotency.begin(id, 'key-1', { video_ids: ['a', 'b', 'c'] })).state).toBe('replay');
  const other = await tg.idempotency.begin(id, 'key-2', { bad: true });
  if (other.state === 'new') {
    await tg.idempotency.renew(id, other.claim);
    await tg.idempotency.release(id, other.claim);
  }

  await tg.holds.settle(id, items.hold.id, { itemId: 'v1', optionalSpent: 1 });
  await tg.holds.settle(id, items.hold.id, { itemId: 'v2', failed: 'no_captions' });
  await tg.holds.get(id, items.hold.id);
  must('renew', await tg.holds.renew(id, items.hold.id));
  await tg.holds.cancel(id, items.hold.id);

  const budget = must('budget', await tg.holds.openBudget(id, { amount: 5, idempotency: { key: 'key-3', body: { limit: 5 } } }));
  if (!budget.ok) throw new Error('unreachable');
  await tg.holds.spend(id, budget.hold.id, { itemId: 'page-1' });
  await tg.holds.finish(id, budget.hold.id);

  // A hold whose worker stops reporting, ended by both sweeps.
  must('open', await tg.holds.open(id, { items: 2, perItem: { required: 1 } }));
  clock.advance(LEASE + 1);
  await tg.holds.sweep();
  await tg.holds.sweepSubject(id);
  await tg.holds.list(id);

  // Grants: added, drawn by a charge and a hold, expired, voided, adjusted, a charge refunded.
  must('grant', await tg.credits.grant(id, { amount: 20, priority: 1, expiresAt: clock.now + 2 * LEASE, operationId: 'grant-1' }));
  must('grant', await tg.credits.grant(id, { amount: 5, effectiveAt: clock.now + LEASE, operationId: 'grant-2' }));
  must('charge', await tg.credits.charge(id, { required: 4, operationId: 'req_2' }));
  must('hold', await tg.holds.openBudget(id, { amount: 3, holdId: 'grant-hold' }));
  must('adjust', await tg.credits.adjust(id, { amount: 2, reason: 'goodwill', operationId: 'adj-1' }));
  must('adjust', await tg.credits.adjust(id, { amount: -1, reason: 'correction', operationId: 'adj-2' }));
  must('refund', await tg.credits.refund(id, { charge: 'req_2', amount: 2, operationId: 'refund-1' }));
  must('void', await tg.credits.voidGrant(id, 'g2', { operationId: 'void-1' }));
  clock.advance(2 * LEASE);
  await tg.credits.grants(id, { ended: true });
  await tg.holds.finish(id, 'grant-hold');

  await tg.usage(id);
  await tg.credits.reconcile(id);
  await tg.credits.history(id, { days: 7 });
  await tg.accounts.changePlan(id, 'business');
  await tg.accounts.startCycle(id);
  clock.advance(40 * DAY);
  must('charge', await tg.credits.charge(id, { required: 1 }));
  await tg.accounts.endedCycles(id);
  await tg.accounts.inspect(id);

  // Events: thresholds of its own, a grant's event delivered, failed to the dead letters,
  // replayed, counted, and a group retired.
  await tg.accounts.setThresholds(id, []);
  must('grant', await tg.credits.grant(id, { amount: 1, operationId: 'grant-3' }));
  const consume = async (fail: boolean) => {
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), 1_500);
    await tg.events.consume({
      group: 'slots',
      signal: stop.signal,
      retryMs: 50,
      maxAttempts: 1,
      handler: () => {
        if (fail) throw new Error('handler failed');
        stop.abort();
      },
    });
    clearTimeout(timer);
  };
  await consume(true);
  const [dead] = await tg.events.deadLetters({ group: 'slots' });
  if (!dead) throw new Error('no dead letter');
  expect(await tg.events.replay('slots', dead.event.id)).toBe(true);
  await consume(false);
  await tg.events.stats();
  await tg.events.removeGroup('slots');
  // Left open, so the open-holds set exists when the stored keys are listed.
  must('open', await tg.holds.open(id, { items: 1, perItem: { required: 1 } }));
  // Refused while a hold is open: nothing erased.
  expect(await tg.accounts.delete(id)).toEqual({ ok: false, reason: 'holds_open' });
}

describe.each(CLIENT_KINDS)('one subject, one hash slot, through a %s cluster client', (kind) => {
  let client: TestClient;
  beforeAll(async () => {
    client = await connectTestClient(kind);
    expect(client.topology).toBe('cluster');
  });
  afterAll(() => client?.close());

  const slotOf = async (key: string) => Number(await client.command(['CLUSTER', 'KEYSLOT', key]));

  /** Every script call's keys are the subject's, in its slot; sweep-index calls name the index alone. */
  async function expectOneSlot(calls: SentCommand[], subject: string, sweepIndex: string) {
    const slot = await slotOf(subject);
    for (const { script, keys } of calls) {
      if (INDEX_SCRIPTS.has(script!)) {
        expect(keys, script).toEqual([sweepIndex]);
        continue;
      }
      if (EVENTS_INDEX_SCRIPTS.has(script!)) {
        expect(new Set(await Promise.all(keys.map(slotOf))).size, script).toBe(1);
        for (const key of keys) expect(key, script).not.toContain(`{${subject}}`);
        continue;
      }
      expect(keys.length, script).toBeGreaterThan(0);
      for (const key of keys) {
        expect(key, script).toContain(`{${subject}}`);
        expect(await slotOf(key), `${script}: ${key}`).toBe(slot);
      }
    }
  }

  it("every script's keys hash to the account's slot; only the sweep index is elsewhere, and alone", async () => {
    const recorder = recording(client.adapter);
    const clock = new ManualClock();
    const prefix = uniquePrefix('slots');
    const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: recorder.client, prefix, clock: clock.fn, leaseMs: LEASE, policies: POLICIES });
    const id = accountId('slots');
    await wholeLife(tg, clock, id);

    // Every script of the library ran, so no script escapes the check below.
    const calls = recorder.calls;
    expect(new Set(calls.map((c) => c.script))).toEqual(new Set(Object.keys(SCRIPTS)));
    // The routing key, words[3], is the first key: the subject's own for every subject script.
    for (const c of calls) expect(c.words[3], c.script).toBe(c.keys[0]);
    await expectOneSlot(calls, id, sweepIndexKey(prefix));
  });

  it('every key a script touches is one it declared in KEYS (Redis refuses an undeclared key whose slot is moving)', async () => {
    const ports = clusterNodes()!.map((node) => node.port);
    const monitor = await monitorAll(ports);
    try {
      const clock = new ManualClock();
      const tg = createTollgate({
        plans: EXAMPLE_PLANS,
        redis: client.adapter,
        prefix: uniquePrefix('declared'),
        clock: clock.fn,
        leaseMs: LEASE,
        policies: POLICIES,
      });
      await wholeLife(tg, clock, accountId('declared'));
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      monitor.stop();
    }
    const checked = new Set<string>();
    let touched = 0;
    for (const [n, lines] of monitor.lines.entries()) {
      let declared: string[] | undefined;
      let script = '';
      for (const { source, words } of lines) {
        if (source !== 'lua') {
          const verb = words[0]?.toUpperCase();
          declared = verb === 'FCALL' || verb === 'EVALSHA' || verb === 'EVAL' ? words.slice(3, 3 + Number(words[2])) : undefined;
          script = words[1] ?? '';
          continue;
        }
        if (!declared) continue;
        // The keys of the command the script ran, as Redis itself finds them.
        const keys = (await rawCommand(ports[n]!, ['COMMAND', 'GETKEYS', ...words]).catch(() => [])) as string[];
        for (const key of keys) {
          touched++;
          expect(declared, `${script.slice(0, 40)}: ${words.join(' ')}`).toContain(key);
        }
        checked.add(words[0]!.toUpperCase());
      }
    }
    // The check saw the scripts' commands: reads, writes and expiries.
    expect(touched).toBeGreaterThan(100);
    for (const verb of ['HMGET', 'HSET', 'XADD', 'ZADD', 'PEXPIRE']) expect(checked).toContain(verb);
  });

  it("a policy subject's calls and counters stay in its own slot, with no account anywhere", async () => {
    const recorder = recording(client.adapter);
    const clock = new ManualClock();
    const prefix = uniquePrefix('policy');
    const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: recorder.client, prefix, clock: clock.fn, policies: POLICIES });
    const ip = `ip:${accountId('203.0.113')}`;
    for (let i = 0; i < 7; i++) await tg.limits.admit(ip, { policy: 'anonymous' });
    await tg.limits.peek(ip, { policy: 'anonymous' });
    clock.advance(10_000);
    await tg.limits.admit(ip, { policy: 'anonymous' });
    await tg.limits.reset(ip, { policy: 'anonymous' });
    await tg.limits.admit(ip, { policy: 'anonymous' });
    await expectOneSlot(recorder.calls, ip, sweepIndexKey(prefix));
    const stored = (await client.command(['KEYS', `${prefix}:*`])) as string[];
    expect(stored.length).toBeGreaterThan(0);
    const slot = await slotOf(ip);
    for (const key of stored) {
      expect(key).toBe(`${prefix}:{${ip}}:r:anonymous.api`);
      expect(await slotOf(key), key).toBe(slot);
      expect(await client.command(['EXISTS', key]), key).toBe(1);
    }
  });

  it('every key the library wrote for the account is stored in its slot, on the node that owns it', async () => {
    const clock = new ManualClock();
    const prefix = uniquePrefix('stored');
    const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: client.adapter, prefix, clock: clock.fn, leaseMs: LEASE, policies: POLICIES });
    const id = accountId('stored');
    await wholeLife(tg, clock, id);

    // KEYS goes to every master; a key is only ever stored on the master of its slot.
    const stored = (await client.command(['KEYS', `${prefix}:*`])) as string[];
    // The sweep index and the events' deployment-wide keys are not the account's.
    const own = stored.filter((key) => key !== sweepIndexKey(prefix) && !key.startsWith(`${prefix}:{events}:`));
    const keys = new SubjectKeys(prefix, id);
    const base = keys.account.slice(0, -1);
    // Account (with its API keys and window counts), ended cycles, journal, daily history, open
    // and all holds, hold hashes (with their settled items), operation ids (with the ids of the
    // holds dropped 40 days on, past endedHolds.keepMs), Idempotency-Key records, a policy's
    // counts: all written, all tagged.
    const kinds = new Set(own.map((key) => key.slice(base.length).split(':')[0]));
    expect(kinds).toEqual(new Set(['a', 'cy', 'jn', 'd', 'ha', 'hl', 'h', 'op', 'ik', 'r']));
    const accountSlot = await slotOf(id);
    for (const key of own) {
      expect(key.startsWith(base), key).toBe(true);
      expect(await slotOf(key), key).toBe(accountSlot);
      // Routed by key, so the command reaches the slot's owner or fails with MOVED.
      expect(await client.command(['EXISTS', key]), key).toBe(1);
    }
    // Names built for any hold, operation, Idempotency-Key or counter land there too.
    for (const key of [
      keys.hold('hold_x'),
      keys.operations,
      keys.holdsEnded,
      keys.idempotency('Any key ~!@#$%^&*()'),
      keys.policyCounters('anonymous', 'api'),
    ]) {
      expect(await slotOf(key), key).toBe(accountSlot);
    }
  });
});

// The function library on a cluster: loaded where it is missing, by the key of the call that
// found it so (a fresh master, or one promoted without it). A cluster of this file's own, so
// that flushing it changes nothing for the other files.
describe('the function library on a cluster', () => {
  let cluster: RedisClusterHandle;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  });
  afterAll(() => cluster?.stop());

  /** Whether each master (in port order) has the library. */
  const loaded = async () =>
    Promise.all(cluster.nodes.map(async ({ port }) => ((await rawCommand(port, ['FUNCTION', 'LIST', 'LIBRARYNAME', LIBRARY.name])) as unknown[]).length === 1));
  const masterOf = async (key: string) => {
    const slot = Number(await rawCommand(cluster.nodes[0]!.port, ['CLUSTER', 'KEYSLOT', key]));
    const slots = (await rawCommand(cluster.nodes[0]!.port, ['CLUSTER', 'SLOTS'])) as [number, number, [string, number]][];
    return slots.find(([from, to]) => slot >= from && slot <= to)![2][1];
  };

  describe.each(CLIENT_KINDS)('through %s', (kind) => {
    let client: TestClient;
    beforeAll(async () => {
      client = await connectTestClient(kind, { cluster: cluster.nodes });
    });
    afterAll(() => client?.close());

    it('a fresh cluster gets the library from the first calls, and every master ends up with it; then FCALL alone', async () => {
      await Promise.all(cluster.nodes.map(({ port }) => rawCommand(port, ['FUNCTION', 'FLUSH'])));
      const recorder = recording(client.adapter);
      const prefix = uniquePrefix('library');
      const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: recorder.client, prefix, clock: new ManualClock().fn });
      const ids = Array.from({ length: 12 }, () => accountId('lib'));
      const masters = new Set(await Promise.all(ids.map((id) => masterOf(new SubjectKeys(prefix, id).account))));
      expect(masters.size).toBe(cluster.nodes.length);
      for (const id of ids) await tg.accounts.create(id, { plan: 'pro' });
      expect(await loaded()).toEqual(cluster.nodes.map(() => true));
      // node-redis 6 sends FUNCTION LOAD to every master, ioredis loads every master: one load.
      expect(recorder.loads).toHaveLength(1);
      recorder.clear();
      for (const id of ids) expect(await tg.credits.charge(id, { required: 1 })).toMatchObject({ ok: true, balance: 4999 });
      expect(recorder.sent.map((c) => `${c.words[0]} ${c.script}`)).toEqual(ids.map(() => 'FCALL charge'));
      expect(recorder.loads).toEqual([]);
    });

    it('a master that lost the library (as one promoted without it) gets it again from the first call whose key it owns; the others answer at once', async () => {
      const prefix = uniquePrefix('lost');
      const recorder = recording(client.adapter);
      const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: recorder.client, prefix, clock: new ManualClock().fn });
      const ids = Array.from({ length: 12 }, () => accountId('lost'));
      for (const id of ids) await tg.accounts.create(id, { plan: 'pro' });
      const lost = cluster.nodes[1]!.port;
      await rawCommand(lost, ['FUNCTION', 'FLUSH']);
      recorder.clear();
      for (const id of ids) expect(await tg.credits.charge(id, { required: 1 })).toMatchObject({ ok: true });
      const onLost = await Promise.all(ids.map(async (id) => (await masterOf(new SubjectKeys(prefix, id).account)) === lost));
      const first = onLost.indexOf(true);
      expect(first).toBeGreaterThanOrEqual(0);
      // One call met "Function not found" (its key's master loaded the library), and was sent again.
      expect(recorder.loads).toEqual([new SubjectKeys(prefix, ids[first]!).account]);
      expect(recorder.sent.filter((c) => c.noscript).map((c) => c.keys[0])).toEqual([new SubjectKeys(prefix, ids[first]!).account]);
      expect(recorder.calls.map((c) => c.words[0])).toEqual(ids.map(() => 'FCALL'));
      expect(await loaded()).toEqual(cluster.nodes.map(() => true));
    });
  });
});
