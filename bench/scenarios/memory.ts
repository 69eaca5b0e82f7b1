/**
 * Redis memory, from INFO memory used_memory before and after each step, on an emptied server,
 * with tollgate's defaults (journal and history on):
 *   idle accounts  `accounts` accounts on the default "pro" plan (ids acct-000000 ...), no keys;
 *   first key      one API key issued to each of them (what a host with one key per customer pays);
 *   second key     one more key each (what each further key adds to the subject's key hash);
 *   charges        100 charges on each of 1,000 accounts (journal entry, per-day history and
 *                  the account's recent charge ids), so the stream's first node is amortised.
 */
import { createTollgate } from '../../src/index.ts';
import { EXAMPLE_PLANS } from '../../examples/shared/plans.ts';
import type { BenchClient } from '../clients.ts';
import { parallel } from '../fixture.ts';
import { usedMemory } from '../redisInfo.ts';

export interface MemoryResult {
  accounts: number;
  /** Bytes per idle account without keys. */
  perAccount: number;
  /** Bytes the first API key adds to an account. */
  perFirstKey: number;
  /** Bytes a second API key adds to an account. */
  perSecondKey: number;
  /** Bytes per charge (journal entry, history), from `chargesPerAccount` charges on each of `chargeAccounts` accounts. */
  perCharge: number;
  chargeAccounts: number;
  chargesPerAccount: number;
}

const id = (i: number) => `acct-${String(i).padStart(6, '0')}`;

export async function measureMemory(admin: BenchClient, client: BenchClient, accounts: number): Promise<MemoryResult> {
  const chargeAccounts = Math.min(accounts, 1_000);
  const chargesPerAccount = 100;
  const grow = async (work: () => Promise<void>) => {
    const before = await usedMemory(admin);
    await work();
    return (await usedMemory(admin)) - before;
  };
  const tg = createTollgate({ redis: client.tollgate, plans: EXAMPLE_PLANS });

  await admin.command(['FLUSHALL']);
  const idle = await grow(() => parallel(accounts, 64, (i) => tg.accounts.create(id(i), { plan: 'pro' })));
  const firstKey = await grow(() => parallel(accounts, 64, (i) => tg.keys.issue(id(i))));
  const secondKey = await grow(() => parallel(accounts, 64, (i) => tg.keys.issue(id(i))));
  const charges = await grow(() =>
    parallel(chargeAccounts * chargesPerAccount, 64, async (i) => {
      const outcome = await tg.credits.charge(id(i % chargeAccounts), { required: 1 });
      if (!outcome.ok) throw new Error('charge found no credits');
    }),
  );
  await admin.command(['FLUSHALL']);

  return {
    accounts,
    perAccount: idle / accounts,
    perFirstKey: firstKey / accounts,
    perSecondKey: secondKey / accounts,
    perCharge: charges / (chargeAccounts * chargesPerAccount),
    chargeAccounts,
    chargesPerAccount,
  };
}
