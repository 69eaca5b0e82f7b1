// Resharding on a real 3-master cluster: every credit-moving script run while its subject's
// slot moves, in each state of a move (all keys still on the source; split across both; all
// moved but the slot not yet assigned). A call that meets the move (TRYAGAIN, ASK) waits for
// it within its timeout and then applies once; the invariants hold and reconcile matches
// after every run. A call whose move outlasts its timeout fails with StoreUnavailableError
// having written nothing. A cluster of this file's own, so the moves disturb no other file.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createTollgate, type Tollgate } from '../../src/index.ts';
import { StoreUnavailableError } from '../../src/errors.ts';
import { checkInvariants } from '../../src/model/index.ts';
import { SubjectKeys } from '../../src/redisKeys.ts';
import { beginSlotMove, endSlotMove, keysOnSource, migrateKey, migrateKeys, slotOfKey } from '../helpers/cluster.ts';
import { uniquePrefix } from '../helpers/redis.ts';
import { clusterClient, ownCluster } from '../helpers/ownCluster.ts';
import { CLIENT_KINDS, ManualClock, accountId } from '../helpers/tollgate.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

const LEASE = 60_000;
/** How long a call waits on the moving slot before the move ends. */
const MOVE_ENDS_AFTER_MS = 150;

type State = 'all keys on the source' | 'keys split across both' | 'all keys moved, slot not yet assigned';
const STATES: State[] = ['all keys on the source', 'keys split across both', 'all keys moved, slot not yet assigned'];

interface Case {
  /** Calls made before the move, so the keys the script reads exist. */
  prepare(tg: Tollgate, id: string, clock: ManualClock): Promise<(tg: Tollgate) => Promise<unknown>>;
}

const must = <T>(what: string, value: T): T => {
  const v = value as { ok?: boolean; accepted?: boolean; ended?: boolean };
  if (v.ok === false || v.accepted === false || v.ended === false) throw new Error(`${what}: ${JSON.stringify(value)}`);
  return value;
};

async function openItems(tg: Tollgate, id: string) {
  const opened = must('open', await tg.holds.open(id, { items: 3, perItem: { required: 1, optional: 1 } }));
  if (!opened.ok) throw new Error('unreachable');
  return opened.hold.id;
}

/** Every script that moves credits (or keys), by what it does. */
const CASES: Record<string, Case> = {
  charge: { prepare: async (_tg, id) => async (t) => must('charge', await t.credits.charge(id, { required: 2 })) },
  'hold open': { prepare: async (_tg, id) => async (t) => must('open', await t.holds.open(id, { items: 2, perItem: { required: 1 } })) },
  settle: {
    prepare: async (tg, id) => {
      const hold = await openItems(tg, id);
      return async (t) => must('settle', await t.holds.settle(id, hold, { itemId: 'v1', optionalSpent: 1 }));
    },
  },
  spend: {
    prepare: async (tg, id) => {
      const budget = must('budget', await tg.holds.openBudget(id, { amount: 5 }));
      if (!budget.ok) throw new Error('unreachable');
      return async (t) => must('spend', await t.holds.spend(id, budget.hold.id, { itemId: 'page-1', amount: 2 }));
    },
  },
  finish: {
    prepare: async (tg, id) => {
      const hold = await openItems(tg, id);
      must('settle', await tg.holds.settle(id, hold, { itemId: 'v1' }));
      return async (t) => must('finish', await t.holds.finish(id, hold));
    },
  },
  cancel: {
    prepare: async (tg, id) => {
      const hold = await openItems(tg, id);
      return async (t) => must('cancel', await t.holds.cancel(id, hold));
    },
  },
  sweep: {
    prepare: async (tg, id, clock) => {
      await openItems(tg, id);
      clock.advance(LEASE + 1);
      return async (t) => expect((await t.holds.sweepSubject(id)).ended).toBe(1);
    },
  },
  'plan change': { prepare: async (_tg, id) => async (t) => t.accounts.changePlan(id, 'business', { startNewCycle: true }) },
  'new cycle': { prepare: async (_tg, id) => async (t) => t.accounts.startCycle(id) },
  'key issue': { prepare: async (_tg, id) => async (t) => t.keys.issue(id, { name: 'ci' }) },
  'key revoke': {
    prepare: async (tg, id) => {
      const { keyId } = await tg.keys.issue(id);
      return async (t) => expect(await t.keys.revoke(id, keyId)).toBe(true);
    },
  },
};

describe('resharding: every credit-moving script while its slot moves', () => {
  const cluster = ownCluster();

  describe.each(CLIENT_KINDS)('through %s', (kind) => {
    const client = clusterClient(kind, cluster);

    /** A tollgate on its own prefix with a fresh account that has ended a cycle and spent a little. */
    async function fresh(options: { timeoutMs?: number } = {}) {
      const clock = new ManualClock();
      const prefix = uniquePrefix('reshard');
      const tg = createTollgate({
        plans: EXAMPLE_PLANS,
        redis: client().adapter,
        prefix,
        clock: clock.fn,
        leaseMs: LEASE,
        timeoutMs: options.timeoutMs ?? 5_000,
      });
      const id = accountId('reshard');
      await tg.accounts.create(id, { plan: 'pro' });
      // An ended cycle, so the cycles hash exists: a script whose declared keys all exist runs
      // on the source mid-move rather than waiting out the move.
      await tg.accounts.startCycle(id);
      must('charge', await tg.credits.charge(id, { required: 1, optional: 1 }));
      await tg.limits.admit(id, { credits: 1 });
      const account = new SubjectKeys(prefix, id).account;
      return { tg, id, clock, account, slot: await slotOfKey(cluster(), account) };
    }

    async function expectSound(tg: Tollgate, id: string) {
      expect(checkInvariants(await tg.accounts.inspect(id))).toEqual([]);
      expect(await tg.credits.reconcile(id)).toMatchObject({ complete: true, matches: true });
    }

    describe.each(STATES)('%s', (state) => {
      const runDuringMove = async (name: string) => {
        const { tg, id, clock, slot } = await fresh();
        const run = await CASES[name]!.prepare(tg, id, clock);
        const before = await tg.accounts.inspect(id);
        const move = await beginSlotMove(cluster(), slot);
        try {
          // Sorted, so the split is the same every run: the account stays, its cycles move.
          const keys = (await keysOnSource(move)).sort();
          expect(keys.length).toBeGreaterThan(0);
          if (state === 'keys split across both')
            await migrateKeys(
              move,
              keys.filter((_, i) => i % 2 === 1),
            );
          if (state === 'all keys moved, slot not yet assigned') await migrateKeys(move);
          const call = run(tg);
          const settled = call.then(
            () => 'ok',
            (error: unknown) => (error instanceof Error ? error.message : String(error)),
          );
          await sleep(MOVE_ENDS_AFTER_MS);
          await endSlotMove(cluster(), move);
          expect(await settled).toBe('ok');
        } finally {
          await endSlotMove(cluster(), move).catch(() => undefined);
        }
        await expectSound(tg, id);
        const after = await tg.accounts.inspect(id);
        if (name === 'charge') expect(after.credits.balance).toBe(before.credits.balance - 2);
        if (name === 'hold open') expect(after.credits.held).toBe(before.credits.held + 2);
      };
      it.each(Object.keys(CASES))('%s waits for the move, applies once, and the invariants hold', runDuringMove);
    });

    it('calls mid-move write no key on the target that the source still holds: the move then takes every key', async () => {
      const { tg, id, slot, account } = await fresh();
      const budget = must('budget', await tg.holds.openBudget(id, { amount: 5 }));
      if (!budget.ok) throw new Error('unreachable');
      const move = await beginSlotMove(cluster(), slot);
      const left: string[] = [];
      try {
        // The account on the target (reached by ASK), everything else still on the source.
        expect(await keysOnSource(move)).toContain(account);
        await migrateKeys(move, [account]);
        await tg.limits.admit(id, { credits: 1 });
        await tg.limits.admit(id, { surface: 'web' });
        for (const key of await keysOnSource(move)) if ((await migrateKey(move, key)) === 'busy') left.push(key);
      } finally {
        for (const key of left) await migrateKey(move, key, true);
        await endSlotMove(cluster(), move);
      }
      expect(left).toEqual([]);
      await expectSound(tg, id);
    });

    // The window counts live in the account's own hash, the one key an admit declares: an
    // admit on either side of the move counts once, and the move takes every key.
    it("an admit mid-move counts in the account's own hash, wherever the account is: the move then takes every key", async () => {
      const { tg, id, slot } = await fresh();
      const move = await beginSlotMove(cluster(), slot);
      let account = '';
      try {
        const keys = await keysOnSource(move);
        account = keys.find((key) => key.endsWith('}:a'))!;
        expect(account).toBeDefined();
        expect(keys.filter((key) => key.includes('}:r:'))).toEqual([]);
        await migrateKeys(
          move,
          keys.filter((key) => key !== account),
        );
        const onSource = await tg.limits.admit(id);
        expect(onSource.allowed).toBe(true);
        expect(await migrateKey(move, account)).toBe('moved');
        const onTarget = await tg.limits.admit(id);
        expect(onTarget.allowed && onTarget.rateLimit.remaining).toBe(onSource.rateLimit.remaining - 1);
      } finally {
        await migrateKey(move, account, true).catch(() => undefined);
        await endSlotMove(cluster(), move);
      }
      expect((await tg.limits.peek(id)).rateLimit.remaining).toBeLessThan((await tg.accounts.limits(id)).limits.api![0]!.limit);
    });

    it('a call whose slot is still moving at its timeout throws StoreUnavailableError, and wrote nothing', async () => {
      const { tg, id, slot } = await fresh({ timeoutMs: 400 });
      const before = await tg.accounts.inspect(id);
      const entries = (await tg.credits.reconcile(id)).entries;
      const move = await beginSlotMove(cluster(), slot);
      try {
        const keys = (await keysOnSource(move)).sort();
        await migrateKeys(
          move,
          keys.filter((_, i) => i % 2 === 1),
        );
        await expect(tg.credits.charge(id, { required: 2 })).rejects.toThrowError(StoreUnavailableError);
        // ioredis retries TRYAGAIN itself for up to 16 x 100 ms: let those attempts run out first.
        await sleep(2_000);
      } finally {
        await endSlotMove(cluster(), move);
      }
      expect((await tg.accounts.inspect(id)).credits).toEqual(before.credits);
      expect((await tg.credits.reconcile(id)).entries).toBe(entries);
      await expectSound(tg, id);
    });
  });
});
