/**
 * Holds (docs/holds.md): opening one must cost the same whatever its number of items (one
 * reservation, no per-item work), and each settlement is one script.
 *   hold open N=1, N=5,000   tg.holds.open as a host calls it (openHold.lua, with the sweep
 *                            index mark beside it: two scripts per open);
 *   hold settle              one delivered item of an open 5,000-item hold;
 *   openHold.lua raw         the command the library sends with `scripts: "eval"` (EVALSHA),
 *                            with a fresh hold id, alone;
 *   reserveJob.lua (0.1)     what 0.1 ran for the same request, by raw EVALSHA against an
 *                            account in 0.1's shape (bench/fixtures/reserveJob01.ts).
 * Every cell starts from an emptied Redis with fresh accounts, so open holds of earlier cells
 * weigh on none. The bench plan's cap and credits are out of reach: every open reserves.
 */
import { createTollgate, type Tollgate } from '../../src/index.ts';
import { openHold } from '../../src/scripts/bundle.generated.ts';
import { recording, type BenchClient } from '../clients.ts';
import { ACCOUNTS, BENCH_LEASE_MS, BENCH_PLANS, accountOf, createBenchAccounts, parallel } from '../fixture.ts';
import { RESERVE_JOB_01_SOURCE, account01, reserveJob01 } from '../fixtures/reserveJob01.ts';
import type { Scenario } from './requests.ts';

export const HOLD_SCENARIO = {
  open1: 'hold open N=1',
  open5000: 'hold open N=5,000',
  settle: 'hold settle (1 item delivered)',
  rawOpen: 'openHold.lua N=1 by raw EVALSHA',
  reserve01: '0.1 reserveJob.lua N=1 by raw EVALSHA',
} as const;

export type HoldKey = keyof typeof HOLD_SCENARIO;

/** A hold or job id as long as the library's own (hold_ + 16 characters), unique in a cell. */
const idOf = (prefix: string, i: number) => `${prefix}${String(i).padStart(16, '0')}`;

export async function holdScenarios(client: BenchClient, admin: BenchClient): Promise<Record<HoldKey, Scenario>> {
  const tg = createTollgate({ redis: client.tollgate, plans: BENCH_PLANS, leaseMs: BENCH_LEASE_MS });
  await admin.command(['SCRIPT', 'LOAD', RESERVE_JOB_01_SOURCE]);

  /** Empties Redis and creates the accounts again, 0.2's and 0.1's. */
  const fresh = async () => {
    await admin.command(['FLUSHALL']);
    await createBenchAccounts(tg);
    const now = Date.now();
    await parallel(ACCOUNTS, 64, (i) => client.tollgate.send(account01(accountOf(i), now)));
  };

  // openHold's command as the library builds it, one per account, with its hold id as a hole.
  const openTemplates: string[][][] = [];
  const captureOpen = async () => {
    let last: string[] = [];
    const capture = createTollgate({
      redis: recording(client.tollgate, (words) => {
        if (words[1] === openHold.sha1) last = words;
      }),
      plans: BENCH_PLANS,
      leaseMs: BENCH_LEASE_MS,
      scripts: 'eval',
    });
    await parallel(ACCOUNTS, 1, async (i) => {
      const outcome = await capture.holds.open(accountOf(i), { items: 1, perItem: { required: 1 } });
      if (!outcome.ok) throw new Error(`holds.open refused: ${outcome.reason}`);
      const id = outcome.hold.id;
      if (!last.some((w) => w === id)) throw new Error('the captured openHold command does not carry the hold id');
      openTemplates[i] = last.map((w) => w.split(id));
    });
  };

  const opened = (outcome: Awaited<ReturnType<Tollgate['holds']['open']>>) => {
    if (!outcome.ok) throw new Error(`holds.open refused: ${outcome.reason}`);
  };
  const open = (items: number) => async (i: number) => opened(await tg.holds.open(accountOf(i), { items, perItem: { required: 1 } }));

  // One open 5,000-item hold per account, opened afresh for each cell: a cell settles far
  // fewer than 5,000 items per account, so every measured settlement is accepted.
  const openHolds: string[] = [];
  return {
    open1: { name: HOLD_SCENARIO.open1, prepare: fresh, op: open(1) },
    open5000: { name: HOLD_SCENARIO.open5000, prepare: fresh, op: open(5_000) },
    settle: {
      name: HOLD_SCENARIO.settle,
      prepare: async () => {
        await fresh();
        await parallel(ACCOUNTS, 64, async (i) => {
          const outcome = await tg.holds.open(accountOf(i), { items: 5_000, perItem: { required: 1 } });
          if (!outcome.ok) throw new Error(`holds.open refused: ${outcome.reason}`);
          openHolds[i] = outcome.hold.id;
        });
      },
      op: async (i) => {
        const outcome = await tg.holds.settle(accountOf(i), openHolds[i % ACCOUNTS]!, { itemId: `item-${i}` });
        if (!outcome.ok || outcome.replayed) throw new Error(`holds.settle refused: ${outcome.ok ? 'replayed' : outcome.reason}`);
      },
    },
    rawOpen: {
      name: HOLD_SCENARIO.rawOpen,
      prepare: async () => {
        await fresh();
        await captureOpen();
      },
      op: async (i) => {
        const id = idOf('hold_', i);
        const reply = (await client.tollgate.send(openTemplates[i % ACCOUNTS]!.map((parts) => parts.join(id)))) as unknown[];
        if (reply[0] !== 0) throw new Error(`openHold.lua answered code ${String(reply[0])}`);
      },
    },
    reserve01: {
      name: HOLD_SCENARIO.reserve01,
      prepare: fresh,
      op: async (i) => {
        const reply = (await client.tollgate.send(reserveJob01(accountOf(i), idOf('job_', i), 1, BENCH_LEASE_MS))) as unknown[];
        if (reply[0] !== 0) throw new Error(`0.1 reserveJob.lua answered code ${String(reply[0])}`);
      },
    },
  };
}
