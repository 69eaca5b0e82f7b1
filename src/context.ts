/**
 * What every concept module shares: the script runner, the key names, the plan table, the
 * clock and the configured bounds. Built once by createTollgate from validated options.
 */
import { randomBytes } from "node:crypto";
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
  /** How long an id the library made up (for a charge or a job result) is remembered. */
  resendWindowMs: number;
  idempotencyTtlMs: number;
  idempotencyLockMs: number;
  /**
   * A random id for a call the caller gave none, so a resent command still applies once;
   * "" (no id) when resendWindowMs is 0.
   */
  newId(): string;
  /** Time for the next script: the injected clock in ms, or -1 for the Redis server's TIME. */
  now(): number;
  /** Validates the account id (SPEC §2) and returns its keys. */
  keys(accountId: unknown): AccountKeys;
}

export function makeContext(parts: Omit<Context, "keys" | "now" | "newId"> & { clock?: () => number }): Context {
  const { clock, ...rest } = parts;
  return {
    ...rest,
    now: clock ? () => Math.floor(clock()) : () => -1,
    newId: parts.resendWindowMs > 0 ? () => `~${randomBytes(12).toString("base64url")}` : () => "",
    keys: (accountId) => accountKeys(parts.prefix, checkAccountId(accountId)),
  };
}
