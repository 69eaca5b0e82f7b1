/**
 * createTollgate: validates the host's options once and wires the concept modules to one
 * script runner. Everything a server needs hangs off the returned object.
 */
import { Accounts } from "./accounts.ts";
import { makeContext, type JournalArgs } from "./context.ts";
import { Credits } from "./credits.ts";
import { InvalidInputError } from "./errors.ts";
import { Idempotency } from "./idempotency.ts";
import { Jobs } from "./jobs.ts";
import { Limits, type Surface } from "./limits.ts";
import { DEFAULT_PLANS, validatePlans, type PlanTable } from "./plans.ts";
import type { RedisScriptClient } from "./redis/client.ts";
import { ScriptRunner } from "./scripts/runner.ts";
import { readUsage, type Usage } from "./usage.ts";
import { count } from "./validate.ts";

export interface TollgateOptions {
  /** A client adapted with fromNodeRedis or fromIoredis (standalone or cluster). */
  redis: RedisScriptClient;
  /** Plan table; default DEFAULT_PLANS (SPEC §2). Validated here. */
  plans?: PlanTable;
  /** Key prefix; default "tg". */
  prefix?: string;
  /** Injected clock (ms). Default: the Redis server's TIME, so all app servers agree (SPEC §3). */
  clock?: () => number;
  /** Credit journal: bounded by entries or age, or false to keep none. Default 10,000 entries. */
  journal?: false | { maxEntries: number } | { maxAgeMs: number };
  /** A quota-store call slower than this fails closed with StoreUnavailableError. Default 2000. */
  timeoutMs?: number;
  /** Job lease; every recorded result renews it. Default 5 minutes. */
  leaseMs?: number;
  /** How long a charge's operation id is remembered. Default 24 h. */
  operationTtlMs?: number;
  /**
   * Charges and job results without a caller's id get a random one, remembered this long, so
   * a command a client resends after a reconnect (ioredis does by default) applies once.
   * Default 60 s. 0 gives them none: then turn client resends off
   * (ioredis `autoResendUnfulfilledCommands: false`).
   */
  resendWindowMs?: number;
  /** How long an Idempotency-Key outcome is kept (SPEC §7). Default 24 h. */
  idempotencyTtlMs?: number;
  /** How long a pending Idempotency-Key survives a crashed holder. Default 60 s. */
  idempotencyLockMs?: number;
}

export interface Tollgate {
  accounts: Accounts;
  limits: Limits;
  credits: Credits;
  jobs: Jobs;
  idempotency: Idempotency;
  /** The account's whole quota state, read without counting a request. */
  usage(accountId: string, surface?: Surface): Promise<Usage>;
  plans: PlanTable;
}

const HOUR_MS = 3_600_000;

export function createTollgate(options: TollgateOptions): Tollgate {
  if (!options?.redis || typeof options.redis.evalsha !== "function") {
    throw new InvalidInputError("createTollgate needs redis: fromNodeRedis(client) or fromIoredis(client)");
  }
  const prefix = options.prefix ?? "tg";
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(prefix)) throw new InvalidInputError("prefix must be 1-64 of A-Z a-z 0-9 _ . : -");
  const plans = validatePlans(options.plans ?? DEFAULT_PLANS);
  const ctx = makeContext({
    runner: new ScriptRunner(options.redis, count("timeoutMs", options.timeoutMs ?? 2000, 1)),
    prefix,
    plans,
    journal: journalArgs(options.journal),
    windowMs: 60_000,
    leaseMs: count("leaseMs", options.leaseMs ?? 5 * 60_000, 1),
    operationTtlMs: count("operationTtlMs", options.operationTtlMs ?? 24 * HOUR_MS, 1),
    resendWindowMs: count("resendWindowMs", options.resendWindowMs ?? 60_000, 0),
    idempotencyTtlMs: count("idempotencyTtlMs", options.idempotencyTtlMs ?? 24 * HOUR_MS, 1),
    idempotencyLockMs: count("idempotencyLockMs", options.idempotencyLockMs ?? 60_000, 1),
    clock: options.clock,
  });
  return {
    accounts: new Accounts(ctx),
    limits: new Limits(ctx),
    credits: new Credits(ctx),
    jobs: new Jobs(ctx),
    idempotency: new Idempotency(ctx),
    usage: (accountId, surface) => readUsage(ctx, accountId, surface),
    plans,
  };
}

function journalArgs(journal: TollgateOptions["journal"]): JournalArgs {
  if (journal === false) return { journalTrim: "off", journalBound: 0 };
  if (journal === undefined) return { journalTrim: "maxlen", journalBound: 10_000 };
  if ("maxAgeMs" in journal) return { journalTrim: "minage", journalBound: count("journal.maxAgeMs", journal.maxAgeMs, 1) };
  return { journalTrim: "maxlen", journalBound: count("journal.maxEntries", journal.maxEntries, 1) };
}
