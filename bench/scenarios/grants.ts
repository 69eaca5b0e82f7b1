/**
 * Credit grants on the hot path (docs/grants.md): what a charge and an admit with the credit
 * pre-check cost in Redis with and without grants, against the same two scripts as they were
 * before grants (bench/fixtures/beforeGrants.ts), all in one run.
 *   charge before grants     the pre-grants charge function, on accounts without grants;
 *   charge, no grants        today's charge on the same accounts;
 *   charge, N live grants    N = 1, 16, 64 grants of priority 10, so the first source in the
 *                            spend order (a grant) pays the whole charge: the cost of grants
 *                            is reading the order and one grant, whatever N;
 *   admit + pre-check        the same three ways (before, none, with 1 and 64 grants).
 * Every row sends the command the library builds, by raw FCALL (the library's default), with a
 * fresh operation id per charge: the rows differ only in the function called and the account.
 */
import { createTollgate } from '../../src/index.ts';
import { admit as admitScript, charge as chargeScript } from '../../src/scripts/bundle.generated.ts';
import { recording, type BenchClient } from '../clients.ts';
import { BEFORE_GRANTS, loadBeforeGrants } from '../fixtures/beforeGrants.ts';
import { ACCOUNTS, BENCH_PLANS, accountOf, createBenchAccounts, parallel } from '../fixture.ts';
import type { Operation } from '../measure.ts';
import type { Scenario } from './requests.ts';

export const GRANT_COUNTS = [1, 16, 64] as const;

export const GRANTS_SCENARIO = {
  chargeBefore: 'charge before grants (raw FCALL)',
  charge0: 'charge, no grants',
  charge1: 'charge, 1 live grant (it pays)',
  charge16: 'charge, 16 live grants (the first pays)',
  charge64: 'charge, 64 live grants (the first pays)',
  admitBefore: 'admit + pre-check before grants (raw FCALL)',
  admit0: 'admit + pre-check, no grants',
  admit1: 'admit + pre-check, 1 live grant',
  admit64: 'admit + pre-check, 64 live grants',
} as const;

export type GrantsKey = keyof typeof GRANTS_SCENARIO;

/** The account of the i-th operation among those holding n grants (n = 0: the bench accounts). */
export const grantAccountOf = (n: number, i: number) => (n === 0 ? accountOf(i) : `g${n}-${accountOf(i)}`);

/** The priority of the bench grants: below the cycle's 50, so a grant is the first source. */
const GRANT_PRIORITY = 10;

/** Creates ACCOUNTS accounts holding n live grants each (n = 0: the bench accounts). */
async function createGrantAccounts(client: BenchClient, n: number): Promise<void> {
  const tg = createTollgate({ redis: client.tollgate, plans: BENCH_PLANS, grants: { max: 64 } });
  if (n === 0) return createBenchAccounts(tg);
  await parallel(ACCOUNTS, 64, (i) => tg.accounts.create(grantAccountOf(n, i), { plan: 'bench' }));
  await parallel(ACCOUNTS * n, 64, async (j) => {
    const subject = grantAccountOf(n, j % ACCOUNTS);
    const outcome = await tg.credits.grant(subject, {
      amount: 1_000_000_000,
      priority: GRANT_PRIORITY,
      operationId: `bench-grant-${Math.floor(j / ACCOUNTS)}`,
    });
    if (!outcome.ok) throw new Error(`credits.grant refused: ${outcome.reason}`);
  });
}

/** The FCALL words the library sends for one call of `script` on each account, captured once. */
async function capture(client: BenchClient, fn: string, call: (tg: ReturnType<typeof createTollgate>, i: number) => Promise<unknown>) {
  const words: string[][] = [];
  let last: string[] | undefined;
  const tg = createTollgate({
    redis: recording(client.tollgate, (w) => {
      if (w[0] === 'FCALL' && w[1] === fn) last = w;
    }),
    plans: BENCH_PLANS,
    grants: { max: 64 },
  });
  await parallel(ACCOUNTS, 1, async (i) => {
    last = undefined;
    await call(tg, i);
    if (!last) throw new Error(`captured no FCALL ${fn}`);
    words[i] = last;
  });
  return words;
}

export async function grantsScenarios(client: BenchClient, admin: BenchClient): Promise<Record<GrantsKey, Scenario>> {
  await admin.command(['FLUSHALL']);
  await loadBeforeGrants(admin);
  for (const n of [0, ...GRANT_COUNTS]) await createGrantAccounts(client, n);

  const chargeWords: Record<number, string[][]> = {};
  const admitWords: Record<number, string[][]> = {};
  for (const n of [0, ...GRANT_COUNTS]) {
    chargeWords[n] = await capture(client, chargeScript.fn, async (tg, i) => {
      const outcome = await tg.credits.charge(grantAccountOf(n, i), { required: 1 });
      const first = outcome.ok ? outcome.sources[0]?.grantId : undefined;
      if (first !== (n === 0 ? 'cycle:1' : 'g1')) throw new Error(`a bench charge was paid by ${first}, not the first source`);
    });
    admitWords[n] = await capture(client, admitScript.fn, (tg, i) => tg.limits.admit(grantAccountOf(n, i), { credits: 1 }));
  }
  // ARGV[7] of charge is its operation id (lua/charge.lua): a fresh one per call.
  const idAt = 3 + Number(chargeWords[0]![0]![2]) + 6;
  const idLength = chargeWords[0]![0]![idAt]!.length;
  let fresh = 0; // counts over every cell, so no id comes back

  // The reply: code, charged, balance, needed, available, then the drawn list ('c1=1', 'g1=1').
  const SOURCES_AT = 5;
  const charge = (n: number, fn: string): Operation => {
    const first = n === 0 ? 'c1=1' : 'g1=1';
    return async (i) => {
      const words = [...chargeWords[n]![i % ACCOUNTS]!];
      words[1] = fn;
      words[idAt] = `b${String(fresh++).padStart(idLength - 1, '0')}`;
      const reply = (await client.tollgate.send(words)) as unknown[];
      if (reply[0] !== 0 || reply[1] !== 1 || (fn === chargeScript.fn && reply[SOURCES_AT] !== first))
        throw new Error(`charge answered ${JSON.stringify(reply)}`);
    };
  };
  const admit = (n: number, fn: string): Operation => {
    return async (i) => {
      const words = [...admitWords[n]![i % ACCOUNTS]!];
      words[1] = fn;
      const reply = (await client.tollgate.send(words)) as unknown[];
      if (reply[0] !== 0) throw new Error(`admit answered ${JSON.stringify(reply)}`);
    };
  };
  // KEYS[5] of charge is the subject's operations hash (lua/charge.lua). A charge row starts
  // with them empty, so that every row keeps its ids in hashes of the same sizes: a row after
  // another would otherwise find them larger (or turned into a table past 128 entries).
  const opsAt = 3 + 4;
  const freshOperations = (n: number) => async () => {
    const keys = chargeWords[n]!.map((words) => words[opsAt]!);
    for (let i = 0; i < keys.length; i += 100) await admin.command(['DEL', ...keys.slice(i, i + 100)]);
  };
  const ops: Record<GrantsKey, Operation> = {
    chargeBefore: charge(0, BEFORE_GRANTS.charge.fn),
    charge0: charge(0, chargeScript.fn),
    charge1: charge(1, chargeScript.fn),
    charge16: charge(16, chargeScript.fn),
    charge64: charge(64, chargeScript.fn),
    admitBefore: admit(0, BEFORE_GRANTS.admit.fn),
    admit0: admit(0, admitScript.fn),
    admit1: admit(1, admitScript.fn),
    admit64: admit(64, admitScript.fn),
  };
  const chargeOf: Partial<Record<GrantsKey, number>> = { chargeBefore: 0, charge0: 0, charge1: 1, charge16: 16, charge64: 64 };
  return Object.fromEntries(
    Object.entries(ops).map(([key, op]) => {
      const n = chargeOf[key as GrantsKey];
      return [key, { name: GRANTS_SCENARIO[key as GrantsKey], op, prepare: n === undefined ? undefined : freshOperations(n) }];
    }),
  ) as Record<GrantsKey, Scenario>;
}
