/**
 * Redis memory per account: INFO memory used_memory before and after creating `count` idle
 * accounts (ids acct-000000 ... like a host's own ids), on an emptied server, with the credit
 * journal off and on; then, journal on, the bytes each further journal entry adds (charges).
 */
import { createTollgate } from "../../src/index.ts";
import type { BenchClient } from "../clients.ts";
import { BENCH_PLANS, parallel } from "../fixture.ts";
import { usedMemory } from "../redisInfo.ts";

export interface MemoryResult {
  accounts: number;
  /** Bytes per idle account, journal off. */
  perAccountJournalOff: number;
  /** Bytes per idle account, journal on (its stream holds the cycle's opening grant). */
  perAccountJournalOn: number;
  /** Bytes per journal entry, from `entriesPerAccount` charges on every account. */
  perJournalEntry: number;
  entriesPerAccount: number;
}

const id = (i: number) => `acct-${String(i).padStart(6, "0")}`;

export async function measureMemory(admin: BenchClient, client: BenchClient, accounts: number, entriesPerAccount = 4): Promise<MemoryResult> {
  const grow = async (work: () => Promise<void>) => {
    const before = await usedMemory(admin);
    await work();
    return (await usedMemory(admin)) - before;
  };
  const createAll = (journal: boolean) => {
    const tg = createTollgate({ redis: client.tollgate, plans: BENCH_PLANS, journal: journal ? undefined : false });
    return { tg, work: () => parallel(accounts, 64, (i) => tg.accounts.create(id(i), { plan: "bench" })) };
  };

  await admin.command(["FLUSHALL"]);
  const off = createAll(false);
  const journalOff = await grow(off.work);

  await admin.command(["FLUSHALL"]);
  const on = createAll(true);
  const journalOn = await grow(on.work);
  const entries = await grow(() =>
    parallel(accounts * entriesPerAccount, 64, (i) => on.tg.credits.charge(id(i % accounts), { required: 1 })),
  );
  await admin.command(["FLUSHALL"]);

  return {
    accounts,
    perAccountJournalOff: journalOff / accounts,
    perAccountJournalOn: journalOn / accounts,
    perJournalEntry: entries / (accounts * entriesPerAccount),
    entriesPerAccount,
  };
}
