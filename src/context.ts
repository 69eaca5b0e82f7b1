/**
 * What every concept module shares: the script runner, the key names, the plan table, the
 * clock and the configured bounds. Built once by createTollgate from validated options.
 */
import { accountKeys, type AccountKeys } from "./keys.ts";
import type { PlanTable } from "./plans.ts";
import type { ScriptRunner } from "./scripts/runner.ts";
import { accountId as checkAccountId } from "./validate.ts";

export interface JournalArgs {
  journalTrim: "off" | "maxlen" | "minage";
  journalBound: number;
}

export interface Context {
  runner: ScriptRunner;
  prefix: string;
  plans: PlanTable;
  journal: JournalArgs;
  windowMs: number;
  leaseMs: number;
  operationTtlMs: number;
  idempotencyTtlMs: number;
  idempotencyLockMs: number;
  /** Time for the next script: the injected clock in ms, or -1 for the Redis server's TIME. */
  now(): number;
  /** Validates the account id (SPEC §2) and returns its keys. */
  keys(accountId: unknown): AccountKeys;
}

export function makeContext(parts: Omit<Context, "keys" | "now"> & { clock?: () => number }): Context {
  const { clock, ...rest } = parts;
  return {
    ...rest,
    now: clock ? () => Math.floor(clock()) : () => -1,
    keys: (accountId) => accountKeys(parts.prefix, checkAccountId(accountId)),
  };
}
