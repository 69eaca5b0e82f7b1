/**
 * Redis memory per account: INFO memory used_memory before and after creating `accounts` idle
 * accounts on the default "pro" plan (ids acct-000000 ...), on an emptied server, with the
 * credit journal off and on. Then, journal on, the bytes a journal entry adds: 100 charges on
 * each of 1,000 accounts, so the stream's first (preallocated) node is amortised.
 */
import { createTollgate } from "../../src/index.ts";
import type { BenchClient } from "../clients.ts";
import { parallel } from "../fixture.ts";
import { usedMemory } from "../redisInfo.ts";

export interface MemoryResult {
  accounts: number;
  /** Bytes per idle account, journal off. */
  perAccountJournalOff: number;
  /** Bytes per idle account, journal on (its stream holds the cycle's opening grant). */
  perAccountJournalOn: number;
  /** Bytes per journal entry, from `entriesPerAccount` charges on each of `entryAccounts` accounts. */
  perJournalEntry: number;
  entryAccounts: number;
  entriesPerAccount: number;
}

const id = (i: number) => `acct-${String(i).padStart(6, "0")}`;

export async function measureMemory(admin: BenchClient, client: BenchClient, accounts: number): Promise<MemoryResult> {
  const entryAccounts = Math.min(accounts, 1_000);
  const entriesPerAccount = 100;
  const grow = async (work: () => Promise<void>) => {
    const before = await usedMemory(admin);
    await work();
    return (await usedMemory(admin)) - before;
  };
  const createAll = (journal: boolean) => {
    const tg = createTollgate({ redis: client.tollgate, journal: journal ? undefined : false });
    return { tg, work: () => parallel(accounts, 64, (i) => tg.accounts.create(id(i), { plan: "pro" })) };
  };

  await admin.command(["FLUSHALL"]);
  const off = createAll(false);
  const journalOff = await grow(off.work);

  await admin.command(["FLUSHALL"]);
  const on = createAll(true);
  const journalOn = await grow(on.work);
  const entries = await grow(() =>
    parallel(entryAccounts * entriesPerAccount, 64, async (i) => {
      const outcome = await on.tg.credits.charge(id(i % entryAccounts), { required: 1 });
      if (!outcome.ok) throw new Error("charge found no credits");
    }),
  );
  await admin.command(["FLUSHALL"]);

  return {
    accounts,
    perAccountJournalOff: journalOff / accounts,
    perAccountJournalOn: journalOn / accounts,
    perJournalEntry: entries / (entryAccounts * entriesPerAccount),
    entryAccounts,
    entriesPerAccount,
  };
}
