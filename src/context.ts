/**
 * What every concept module shares: the script runner, the key names, the plan and policy
 * tables, the clock and the configured bounds. Built once by createTollgate from validated
 * options; internal (not in the public types).
 */
import type { DenyCache } from './denyCache.ts';
import type { EvictionGuard } from './evictionGuard.ts';
import { accountSurfaceCheck, type PlanTable, type PolicyTable } from './rules/plans.ts';
import { SubjectKeys } from './redisKeys.ts';
import type { ScriptRunner } from './scripts/runner.ts';
import { subjectId } from './rules/validate.ts';
import { staggerOf } from './rules/windows.ts';

export interface ContextParts {
  runner: ScriptRunner;
  prefix: string;
  plans: PlanTable;
  policies: PolicyTable;
  leaseMs: number;
  /** Whether fixed windows are offset per subject (createTollgate's `stagger`). */
  stagger: boolean;
  /** Ids the library makes up for charges without an operation id (false: none). */
  resendIds: boolean;
  denyCache: DenyCache | undefined;
  /** Credit movements and account creation wait for it: `if (!eviction.safe) await eviction.ready()`. */
  eviction: EvictionGuard;
  keyPrefix: string;
  maxKeys: number;
  maxExpiringKeys: number;
  historyDays: number;
  /** Live or pending grants per subject (createTollgate's `grants.max`). */
  grantsMax: number;
  clock: (() => number) | undefined;
}

export interface Context extends ContextParts {
  /** Validates the subject id and returns its keys. */
  redisKeys(subject: unknown): SubjectKeys;
  /**
   * Validates a surface an account is counted on: a name that no plan of the table has is
   * refused before Redis is touched; one the account's own plan lacks is refused by
   * the script.
   */
  accountSurface(surface: unknown): string;
  /** The subject's offset of fixed windows: 0 without stagger. */
  staggerOf(subject: string): number;
  /** This process's time for the deny cache: the injected clock, or Date.now(). */
  localNow(): number;
}

export function makeContext(parts: ContextParts): Context {
  const { prefix, clock } = parts;
  return {
    ...parts,
    redisKeys: (subject) => new SubjectKeys(prefix, subjectId(subject)),
    accountSurface: accountSurfaceCheck(parts.plans),
    staggerOf: parts.stagger ? staggerOf : () => 0,
    localNow: clock ? () => Math.floor(clock()) : () => Date.now(),
  };
}
