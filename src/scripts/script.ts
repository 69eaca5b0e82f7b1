/**
 * What a bundled script is to the rest of the library: its SHA1 and shipped source, the name
 * of its function in the build's function library, and a builder generated from its header
 * that lays out the whole command, FCALL or EVALSHA to the last
 * argument, in one array. The builder fills the standard keys of the subject and the
 * deployment's settings by their header names, so a module passes only what is its own: the
 * hot path builds no intermediate key or argument objects.
 */

/** The Redis keys of one subject that scripts name in their headers. */
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
  /** Its function in LIBRARY: `tg<build id>_<name>`. */
  readonly fn: string;
  /**
   * ["EVALSHA", sha1, numkeys, ...keys, ...args] for this call, or with `viaFunction`
   * ["FCALL", fn, numkeys, ...]: the same words after the first two. words[3] is the routing key.
   */
  command(now: string, settings: Settings, keys: SubjectKeyNames, params: P, viaFunction?: boolean): string[];
}

/** The build's scripts as one Redis Function library (FUNCTION LOAD). */
export interface FunctionLibrary {
  /** `tollgate_<build id>`: the build id is a hash of the text, so two versions never share a name. */
  readonly name: string;
  /** The library's text, as FUNCTION LOAD takes it. */
  readonly source: string;
}

/**
 * The library's text: every helper once at the top, defined once at FUNCTION LOAD, then one
 * function per script whose body is the script's own, word for word (src/scripts/bundle.ts
 * checks it). allow-cross-slot-keys keeps what a script may touch as it is under EVALSHA.
 */
export function functionLibrary<B>(id: string, helpers: string, bodies: Readonly<Record<string, B>>, text: (body: B) => string): FunctionLibrary {
  const name = `tollgate_${id}`;
  const functions = Object.keys(bodies).map((script) => `${functionOpen(id, script)}\n${text(bodies[script]!)}\n${FUNCTION_CLOSE}`);
  return { name, source: `#!lua name=${name}\n${helpers}\n${functions.join("\n")}\n` };
}

export const functionOpen = (id: string, script: string) => `redis.register_function{function_name='tg${id}_${script}', callback=function(KEYS, ARGV)`;
export const FUNCTION_CLOSE = "end, flags={'allow-cross-slot-keys'}}";

/** Header names filled from the subject's keys, the settings, or the call's clock. */
export const SUBJECT_KEYS = ["account", "cycles", "journal", "history", "holdsActive", "holdList"] as const;
export const SUBJECT_ARGS = ["holdPrefix"] as const;
export const SETTINGS = ["journalTrim", "journalBound", "historyDays", "leaseMs", "idemTtlMs", "lockTtlMs", "opTtlMs"] as const;
export const NOW_ARG = "nowMs";

/** A call's words sent by EVALSHA instead of FCALL: the same words after the first two. */
export function evalshaWords(script: Script<unknown>, words: readonly string[]): string[] {
  const out = words.slice();
  out[0] = "EVALSHA";
  out[1] = script.sha1;
  return out;
}

/** A call's words with the script's source (EVAL), after NOSCRIPT. */
export function evalWords(script: Script<unknown>, words: readonly string[]): string[] {
  const out = words.slice();
  out[0] = "EVAL";
  out[1] = script.source;
  return out;
}
