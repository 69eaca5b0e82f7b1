/**
 * Per-request calls, each one EVALSHA through the client under test:
 *   floor     the least a Redis rate limiter can do: one key, INCR + PEXPIRE in one script;
 *   tollgate  admit, admit + credit pre-check, charge (the library as a host calls it);
 *   admit.lua the admit script by raw EVALSHA, to split the library's own cost from the script's;
 *   peer      rate-limiter-flexible RateLimiterRedis.consume on the same client.
 * Every operation checks its outcome, so a misconfigured run fails instead of measuring denials.
 */
import { RateLimiterRedis } from "rate-limiter-flexible";
import type { Tollgate } from "../../src/index.ts";
import { accountKeys } from "../../src/keys.ts";
import { SCRIPTS } from "../../src/scripts/bundle.generated.ts";
import type { BenchClient } from "../clients.ts";
import { accountOf } from "../fixture.ts";
import type { Operation } from "../measure.ts";

export interface Scenario {
  name: string;
  op: Operation;
  /** Runs before the warm-up, e.g. to open the jobs the operations settle. */
  prepare?: () => Promise<void>;
}

const FLOOR_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

export const SCENARIO = {
  floor: "floor: INCR+PEXPIRE script",
  admit: "tollgate admit",
  precheck: "tollgate admit + credit pre-check",
  charge: "tollgate charge 1",
  rawAdmit: "admit.lua by raw EVALSHA",
  rlf: "rate-limiter-flexible consume",
} as const;

export async function requestScenarios(client: BenchClient, tg: Tollgate, tgPrefix: string): Promise<Record<keyof typeof SCENARIO, Scenario>> {
  const floorSha = String(await client.command(["SCRIPT", "LOAD", FLOOR_SCRIPT]));
  await client.command(["SCRIPT", "LOAD", SCRIPTS.admit.source]);

  const limiter = new RateLimiterRedis({
    storeClient: client.raw,
    // node-redis v4+ has its own call shapes; rate-limiter-flexible then sends EVAL, not EVALSHA.
    useRedisPackage: client.name === "node-redis",
    keyPrefix: "rlf",
    points: 1_000_000_000,
    duration: 60,
  });

  // The admit script's keys and arguments as the library builds them, prepared once.
  const rawAdmitKeys = Array.from({ length: 1_000 }, (_, i) => [accountKeys(tgPrefix, accountOf(i)).account]);
  const rawAdmitArgs = Array.from({ length: 1_000 }, (_, i) => ["-1", "api", "60000", "0", accountKeys(tgPrefix, accountOf(i)).counters("api")]);

  const scenarios = {
    floor: async (i: number) => client.evalsha(floorSha, [`floor:{${accountOf(i)}}`], ["60000"]),
    admit: async (i: number) => {
      const admission = await tg.limits.admit(accountOf(i));
      if (!admission.allowed) throw new Error("admit denied a bench request");
    },
    precheck: async (i: number) => {
      const admission = await tg.limits.admit(accountOf(i), { credits: 1 });
      if (!admission.allowed || !admission.credits?.sufficient) throw new Error("admit + pre-check denied a bench request");
    },
    charge: async (i: number) => {
      const outcome = await tg.credits.charge(accountOf(i), { required: 1 });
      if (!outcome.ok) throw new Error("charge found no credits");
    },
    rawAdmit: async (i: number) => {
      const reply = (await client.evalsha(SCRIPTS.admit.sha1, rawAdmitKeys[i % 1_000]!, rawAdmitArgs[i % 1_000]!)) as unknown[];
      if (Number(reply[0]) !== 0) throw new Error(`admit.lua answered code ${String(reply[0])}`);
    },
    rlf: async (i: number) => limiter.consume(accountOf(i)),
  };
  return Object.fromEntries(
    Object.entries(scenarios).map(([key, op]) => [key, { name: SCENARIO[key as keyof typeof SCENARIO], op }]),
  ) as Record<keyof typeof SCENARIO, Scenario>;
}
