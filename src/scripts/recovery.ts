/**
 * The one recovery ladder of a script call, shared by the runner and
 * durable movements. After a call failed where nothing ran, it is sent
 * again:
 *   - a slot that is moving (TRYAGAIN, an ASK or MOVED the client did not follow, CLUSTERDOWN):
 *     the same words after a backoff, until the call's deadline;
 *   - an FCALL whose function is missing: once the library is loaded where the call's key lives;
 *   - an FCALL still missing, or refused (functions refused for good turn the caller to
 *     EVALSHA), by EVALSHA, which answers as it always did;
 *   - an EVALSHA that met NOSCRIPT: by EVAL.
 * Anything else is the call's answer. Each of these errors says the script did not run, so a
 * call sent again applies once.
 */
import { functionFailure, isNoScriptError } from '../redis/client.ts';
import { evalshaWords, evalWords, type AnyScript } from './script.ts';

/** How one caller sends a call and what it does between attempts. */
export interface Attempts<T> {
  /** Sends the words; resolves with what came back (a failure as a value: errorOf tells it). */
  send(words: string[]): Promise<T>;
  /** The error of what came back when the script did not answer, else undefined. */
  errorOf(outcome: T): Error | undefined;
  /** Loads the function library where routingKey lives; false when that failed. */
  load(routingKey: string): Promise<boolean>;
  /** Functions were refused for good: later calls go by EVALSHA. */
  refuseFunctions(): void;
  /** Date.now() after which no attempt is started (the call's timeout). */
  deadline: number;
}

/** Backoff while a slot moves: doubling from FIRST_WAIT_MS to MAX_WAIT_MS, with jitter. */
const FIRST_WAIT_MS = 5;
const MAX_WAIT_MS = 100;
/** No attempt starts closer to the deadline than this: its answer must come in time. */
const LAST_START_MS = 20;

/**
 * A cluster's answer that a slot is moving or its owner changing: the command was not run.
 * ioredis wraps the last one in "Too many Cluster redirections" when it gave up itself.
 */
export function isSlotMoving(error: Error): boolean {
  return /^(TRYAGAIN|ASK |MOVED |CLUSTERDOWN)|Too many Cluster redirections/.test(error.message);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Climbs the ladder from a failed outcome; resolves with the first answer, or the last failure. */
export async function recover<T>(script: AnyScript, words: string[], failed: T, attempts: Attempts<T>): Promise<T> {
  let outcome = failed;
  let loaded = false;
  let wait = FIRST_WAIT_MS;
  for (;;) {
    const error = attempts.errorOf(outcome);
    if (error === undefined) return outcome;
    if (isSlotMoving(error)) {
      const pause = wait / 2 + Math.random() * (wait / 2);
      if (Date.now() + pause + LAST_START_MS > attempts.deadline) return outcome;
      await sleep(pause);
      wait = Math.min(wait * 2, MAX_WAIT_MS);
      outcome = await attempts.send(words);
      continue;
    }
    if (words[0] === 'FCALL') {
      const failure = functionFailure(error);
      if (failure === undefined) return outcome;
      if (failure === 'missing' && !loaded) {
        loaded = true;
        if (await attempts.load(words[3]!)) {
          outcome = await attempts.send(words);
          continue;
        }
      }
      if (failure === 'refused') attempts.refuseFunctions();
      words = evalshaWords(script, words);
      outcome = await attempts.send(words);
      continue;
    }
    if (words[0] === 'EVALSHA' && isNoScriptError(error)) {
      words = evalWords(script, words);
      outcome = await attempts.send(words);
      continue;
    }
    return outcome;
  }
}
