/**
 * Per-request calls, each one script through the client under test:
 *   floor      the least a Redis rate limiter can do: one key, INCR + PEXPIRE in one script;
 *   tollgate   admit (the plan's one fixed window), admit + credit pre-check, keys.verify +
 *              admit (with and without the pre-check), a policy admit of a subject with no
 *              account (by one fixed window, by one token bucket, and by a fixed window
 *              with a concurrency limit, admitted then released: two calls), and charge (journal and per-day history on, the defaults; then
 *              history off, so the difference is what the history costs per charge);
 *   admit.lua  by raw EVALSHA, the command the library sends with `scripts: "eval"`, to split
 *              the library's own client cost from the script's (the library's own cells run
 *              its scripts as functions, by FCALL, its default);
 *   peer       rate-limiter-flexible RateLimiterRedis.consume on the same client.
 * Every operation checks its outcome, so a misconfigured run fails instead of measuring denials.
 */
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { createTollgate } from '../../src/index.ts';
import { admit as admitScript } from '../../src/scripts/bundle.generated.ts';
import { recording, type BenchClient } from '../clients.ts';
import { ACCOUNTS, BENCH_PLANS, BENCH_POLICIES, accountOf, createBenchAccounts, ipOf, issueBenchKeys, parallel } from '../fixture.ts';
import type { Operation } from '../measure.ts';

export interface Scenario {
  name: string;
  op: Operation;
  /** Runs before the warm-up, e.g. to open the holds the operations settle. */
  prepare?: () => Promise<void>;
}

export const FLOOR_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

export const SCENARIO = {
  floor: 'floor: INCR+PEXPIRE script',
  admit: 'tollgate admit',
  admitNoTelemetry: 'tollgate admit, telemetry: false',
  precheck: 'tollgate admit + credit pre-check',
  verify: 'tollgate keys.verify + admit',
  verifyPrecheck: 'tollgate keys.verify + admit + pre-check',
  policy: 'tollgate policy admit (no account)',
  policyBucket: 'tollgate policy admit, one token bucket',
  policyInFlight: 'tollgate policy admit + release (concurrency limit)',
  charge: 'tollgate charge 1 (journal + history on)',
  chargeNoHistory: 'tollgate charge 1, history: false',
  rawAdmit: 'admit.lua by raw EVALSHA',
  rlf: 'rate-limiter-flexible consume',
} as const;

export type RequestKey = keyof typeof SCENARIO;

/** Sets up accounts, keys and the peer on this client; the caller starts from an empty Redis. */
export async function requestScenarios(client: BenchClient): Promise<Record<RequestKey, Scenario>> {
  const options = { plans: BENCH_PLANS, policies: BENCH_POLICIES };
  const tg = createTollgate({ redis: client.tollgate, ...options });
  const tgNoHistory = createTollgate({ redis: client.tollgate, ...options, history: false });
  // The default tollgate has telemetry on: @opentelemetry/api is installed here, no SDK registered.
  const tgNoTelemetry = createTollgate({ redis: client.tollgate, ...options, telemetry: false });
  await createBenchAccounts(tg);
  const apiKeys = await issueBenchKeys(tg);

  const floorSha = String(await client.command(['SCRIPT', 'LOAD', FLOOR_SCRIPT]));
  const floorWords = Array.from({ length: ACCOUNTS }, (_, i) => ['EVALSHA', floorSha, '1', `floor:{${accountOf(i)}}`, '60000']);

  // The admit command exactly as the library builds it for EVALSHA, one per account, captured once.
  const admitWords: string[][] = [];
  const capture = createTollgate({
    redis: recording(client.tollgate, (words) => {
      if (words[1] === admitScript.sha1) admitWords.push(words);
    }),
    ...options,
    scripts: 'eval',
  });
  await parallel(ACCOUNTS, 1, (i) => capture.limits.admit(accountOf(i)));
  if (admitWords.length !== ACCOUNTS) throw new Error(`captured ${admitWords.length} admit commands, expected ${ACCOUNTS}`);

  const limiter = new RateLimiterRedis({
    storeClient: client.raw,
    // node-redis v4+ has its own call shapes; rate-limiter-flexible then sends EVAL, not EVALSHA.
    useRedisPackage: client.name === 'node-redis',
    keyPrefix: 'rlf',
    points: 1_000_000_000,
    duration: 60,
  });

  const admitted = (what: string, admission: { ok: boolean; credits?: { sufficient: boolean } }, credits = false) => {
    if (!admission.ok || (credits && !admission.credits?.sufficient)) throw new Error(`${what} denied a bench request`);
  };
  const verified = async (i: number, credits: number) => {
    const outcome = await tg.keys.verify(apiKeys[i % ACCOUNTS]!, { credits });
    if (!outcome.ok) throw new Error(`keys.verify refused a bench key: ${outcome.reason}`);
    admitted('keys.verify', outcome.admission, credits > 0);
  };

  const ops: Record<RequestKey, Operation> = {
    floor: (i) => client.tollgate.send(floorWords[i % ACCOUNTS]!),
    admit: async (i) => admitted('admit', await tg.limits.admit(accountOf(i))),
    admitNoTelemetry: async (i) => admitted('admit', await tgNoTelemetry.limits.admit(accountOf(i))),
    precheck: async (i) => admitted('admit + pre-check', await tg.limits.admit(accountOf(i), { credits: 1 }), true),
    verify: (i) => verified(i, 0),
    verifyPrecheck: (i) => verified(i, 1),
    policy: async (i) => admitted('policy admit', await tg.limits.admit(ipOf(i), { policy: 'anonymous' })),
    policyBucket: async (i) => admitted('bucket admit', await tg.limits.admit(ipOf(i), { policy: 'bucket' })),
    policyInFlight: async (i) => {
      const admission = await tg.limits.admit(ipOf(i), { policy: 'inFlight' });
      admitted('in-flight admit', admission);
      if (!admission.allowed || !(await tg.limits.release(ipOf(i), admission.lease!))) throw new Error('release found no place');
    },
    charge: async (i) => {
      const outcome = await tg.credits.charge(accountOf(i), { required: 1 });
      if (!outcome.ok) throw new Error('charge found no credits');
    },
    chargeNoHistory: async (i) => {
      const outcome = await tgNoHistory.credits.charge(accountOf(i), { required: 1 });
      if (!outcome.ok) throw new Error('charge found no credits');
    },
    rawAdmit: async (i) => {
      const reply = (await client.tollgate.send(admitWords[i % ACCOUNTS]!)) as unknown[];
      if (reply[0] !== 0) throw new Error(`admit.lua answered code ${String(reply[0])}`);
    },
    rlf: (i) => limiter.consume(accountOf(i)),
  };
  return Object.fromEntries(Object.entries(ops).map(([key, op]) => [key, { name: SCENARIO[key as RequestKey], op }])) as Record<RequestKey, Scenario>;
}
