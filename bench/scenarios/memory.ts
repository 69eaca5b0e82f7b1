/**
 * Redis memory, from INFO memory used_memory before and after each step, on an emptied server,
 * with tollgate's defaults (journal and history on):
 *   idle accounts  `accounts` accounts on the default "pro" plan (ids acct-000000 ...), no keys;
 *   first key      one API key issued to each of them (what a host with one key per customer pays);
 *   second key     one more key each (what each further key adds to the subject's key hash);
 *   charges        100 charges on each of 1,000 accounts (journal entry, per-day history and
 *                  the account's recent charge ids), so the stream's first node is amortised;
 *   grants         on 1,000 fresh accounts without keys, the account hash by MEMORY USAGE
 *                  (SAMPLES 0: every field) idle, after a first grant and after 16 (the default
 *                  most): what a live grant keeps in the hash (docs/grants.md#storage). The
 *                  journal entry and operation record a grant writes are not the grant's.
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
  /** The account hash of an idle account without grants or keys (MEMORY USAGE, mean). */
  idleAccountHash?: number;
  /** Bytes the first grant adds to the account hash (its two fields and the order, sum, next roll, number). */
  perFirstGrant?: number;
  /** Bytes each further live grant adds to the account hash. */
  perGrant?: number;
  grantAccounts?: number;
  grantsPerAccount?: number;
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
  const grantAccounts = Math.min(accounts, 1_000);
  const grantsPerAccount = 16;
  const gid = (i: number) => `gacct-${String(i).padStart(6, '0')}`;
  const hashes = async () => {
    let sum = 0;
    await parallel(grantAccounts, 64, async (i) => {
      const bytes = Number(await admin.command(['MEMORY', 'USAGE', `tg:{${gid(i)}}:a`, 'SAMPLES', '0']));
      sum += bytes;
    });
    return sum / grantAccounts;
  };
  const grant = (k: number) =>
    parallel(grantAccounts, 64, async (i) => {
      const outcome = await tg.credits.grant(gid(i), { amount: 1_000, expiresAt: Date.now() + 86_400_000, operationId: `mem-grant-${k}` });
      if (!outcome.ok) throw new Error(`credits.grant refused: ${outcome.reason}`);
    });
  await parallel(grantAccounts, 64, (i) => tg.accounts.create(gid(i), { plan: 'pro' }));
  const idleAccountHash = await hashes();
  await grant(0);
  const oneGrant = await hashes();
  for (let k = 1; k < grantsPerAccount; k++) await grant(k);
  const allGrants = await hashes();
  await admin.command(['FLUSHALL']);

  return {
    accounts,
    perAccount: idle / accounts,
    perFirstKey: firstKey / accounts,
    perSecondKey: secondKey / accounts,
    perCharge: charges / (chargeAccounts * chargesPerAccount),
    chargeAccounts,
    chargesPerAccount,
    idleAccountHash,
    perFirstGrant: oneGrant - idleAccountHash,
    perGrant: (allGrants - oneGrant) / (grantsPerAccount - 1),
    grantAccounts,
    grantsPerAccount,
  };
}
