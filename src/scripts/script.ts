/**
 * What a bundled script is to the rest of the library: its SHA1 and shipped source, the name
 * of its function in the build's function library, and a builder generated from its header
 * that lays out the whole command, FCALL or EVALSHA to the last
 * argument, in one array. The builder fills the standard keys of the subject and the
 * deployment's settings by their header names, so a module passes only what is its own: the
 * hot path builds no intermediate key or argument objects. Its decoder, generated from the
 * header's `Returns:` lines, gives the reply by name.
 */
import type { Code } from './codes.ts';

/** The Redis keys of one subject that scripts name in their headers. */
export interface SubjectKeyNames {
  readonly account: string;
  readonly cycles: string;
  readonly journal: string;
  readonly history: string;
  readonly holdsActive: string;
  readonly holdsEnded: string;
  readonly holdList: string;
  readonly operations: string;
  readonly outbox: string;
}

/** The deployment's settings, as the scripts take them (strings, formatted once). */
export interface Settings {
  readonly journalTrim: string;
  readonly journalBound: string;
  readonly historyDays: string;
  readonly leaseMs: string;
  readonly idempotencyTtlMs: string;
  readonly idempotencyLockMs: string;
  readonly operationTtlMs: string;
  readonly endedHoldsKeepMs: string;
  readonly endedHoldsMax: string;
  /** The plan table accounts are refreshed to: 'v<plansVersion>', or 'd<digest of the table>'. */
  readonly plansVersion: string;
  /** Events one subject's outbox holds at most (createTollgate's events.maxPerSubject). */
  readonly eventsMax: string;
}

/** What every decoded reply has: its result code. */
export interface ScriptReply {
  readonly code: Code;
}

export interface Script<P, R extends ScriptReply = ScriptReply> {
  readonly name: string;
  readonly sha1: string;
  /** What EVAL runs: the helpers it uses, then its own code (body). */
  readonly source: string;
  /** Its own code, compiled: the body of its function in LIBRARY. */
  readonly body: string;
  /** Its function in LIBRARY: `tg<build id>_<name>`. */
  readonly fn: string;
  /**
   * ["EVALSHA", sha1, numkeys, ...keys, ...args] for this call, or with `viaFunction`
   * ["FCALL", fn, numkeys, ...]: the same words after the first two. words[3] is the routing key.
   */
  command(now: string, settings: Settings, keys: SubjectKeyNames, params: P, viaFunction?: boolean): string[];
  /** The reply by name, as the header's `Returns:` lines declare it. */
  decode(reply: readonly unknown[]): R;
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
export function functionLibrary(id: string, helpers: string, bodies: Readonly<Record<string, string>>): FunctionLibrary {
  const name = `tollgate_${id}`;
  const functions = Object.keys(bodies).map((script) => `${functionOpen(id, script)}\n${bodies[script]!}\n${FUNCTION_CLOSE}`);
  return { name, source: `#!lua name=${name}\n${helpers}\n${functions.join('\n')}\n` };
}

export const functionOpen = (id: string, script: string) => `redis.register_function{function_name='tg${id}_${script}', callback=function(KEYS, ARGV)`;
export const FUNCTION_CLOSE = "end, flags={'allow-cross-slot-keys'}}";

/** Header names filled from the subject's keys, the settings, or the call's clock. */
export const SUBJECT_KEYS = ['account', 'cycles', 'journal', 'history', 'holdsActive', 'holdsEnded', 'holdList', 'operations', 'outbox'] as const;
export const SETTINGS = [
  'journalTrim',
  'journalBound',
  'historyDays',
  'leaseMs',
  'idempotencyTtlMs',
  'idempotencyLockMs',
  'operationTtlMs',
  'endedHoldsKeepMs',
  'endedHoldsMax',
  'plansVersion',
  'eventsMax',
] as const;
export const NOW_ARG = 'nowMs';

/** Any script, whatever its params and reply. */
export type AnyScript = Script<never, ScriptReply>;

/** A call's words sent by EVALSHA instead of FCALL: the same words after the first two. */
export function evalshaWords(script: AnyScript, words: readonly string[]): string[] {
  const out = words.slice();
  out[0] = 'EVALSHA';
  out[1] = script.sha1;
  return out;
}

/** A call's words with the script's source (EVAL), after NOSCRIPT. */
export function evalWords(script: AnyScript, words: readonly string[]): string[] {
  const out = words.slice();
  out[0] = 'EVAL';
  out[1] = script.source;
  return out;
}
