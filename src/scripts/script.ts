/**
 * What a bundled script is to the rest of the library: its SHA1 and shipped source, and a
 * builder generated from its header (src/scripts/bundle.ts) that lays out the whole command,
 * EVALSHA to the last argument, in one array. The builder fills the standard keys of the
 * subject and the deployment's settings by their header names, so a module passes only what
 * is its own: the hot path builds no intermediate key or argument objects.
 */

/** The Redis keys of one subject that scripts name in their headers (src/redisKeys.ts). */
export interface SubjectKeyNames {
  readonly account: string;
  readonly cycles: string;
  readonly journal: string;
  readonly history: string;
  readonly holdsActive: string;
  readonly holdList: string;
  /** Hold hashes are holdPrefix + hold id. */
  readonly holdPrefix: string;
}

/** The deployment's settings, as the scripts take them (strings, formatted once). */
export interface Settings {
  readonly journalTrim: string;
  readonly journalBound: string;
  readonly historyDays: string;
  readonly leaseMs: string;
  readonly idemTtlMs: string;
  readonly lockTtlMs: string;
  readonly opTtlMs: string;
}

export interface Script<P> {
  readonly name: string;
  readonly sha1: string;
  readonly source: string;
  /** ["EVALSHA", sha1, numkeys, ...keys, ...args] for this call; words[3] is the routing key. */
  command(now: string, settings: Settings, keys: SubjectKeyNames, params: P): string[];
}

/** Header names filled from the subject's keys, the settings, or the call's clock. */
export const SUBJECT_KEYS = ["account", "cycles", "journal", "history", "holdsActive", "holdList"] as const;
export const SUBJECT_ARGS = ["holdPrefix"] as const;
export const SETTINGS = ["journalTrim", "journalBound", "historyDays", "leaseMs", "idemTtlMs", "lockTtlMs", "opTtlMs"] as const;
export const NOW_ARG = "nowMs";
