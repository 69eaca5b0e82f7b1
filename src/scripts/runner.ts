/**
 * The one call path of every script: builds the command from the script's header (filling
 * the subject's keys, the settings and "now" by name), sends it with EVALSHA and once more
 * with EVAL on NOSCRIPT (a restarted or flushed server), and turns the replies that mean "not
 * there" into their errors once (BullMQ's finishedErrors), so concept modules hold the rule
 * and nothing else. Every failure of the store, and every call slower than the timeout,
 * becomes a StoreUnavailableError so callers fail closed (SPEC §8).
 */
import { AccountNotFoundError, HoldNotFoundError, InvalidInputError, StoreUnavailableError } from "../errors.ts";
import { isNoScriptError, type RedisScriptClient } from "../redis/client.ts";
import { Code } from "./codes.ts";
import type { DurableMovements } from "./durable.ts";
import type { Script, Settings, SubjectKeyNames } from "./script.ts";

/** What a reply's "not found" codes name in their errors. */
export interface CallSubject extends SubjectKeyNames {
  readonly subject: string;
}

export class ScriptRunner {
  /** Whether movements wait for replicas (createTollgate's `durability`). */
  readonly durable: boolean;

  constructor(
    private readonly client: RedisScriptClient,
    private readonly timeoutMs: number,
    readonly settings: Settings,
    /** Time for the next script: the injected clock in ms, or -1 for the Redis server's TIME. */
    private readonly clock: (() => number) | undefined,
    private readonly durability?: DurableMovements,
  ) {
    this.durable = durability !== undefined;
  }

  /**
   * Runs a credit movement (a charge, a hold opened, settled, spent or ended, the sweep's
   * ends). Without durability it is run itself, so the movement costs what it did; with it,
   * the movement is acknowledged only once the replicas confirmed it (src/scripts/durable.ts),
   * and operationId is what an unconfirmed movement reports to retry with.
   */
  move<P>(script: Script<P>, keys: CallSubject, params: P, holdId: string | undefined, operationId: string): Promise<unknown[]> {
    return this.durability ? this.moveDurably(script, keys, params, holdId, operationId) : this.run(script, keys, params, holdId);
  }

  /** "now" as the scripts take it. */
  now(): string {
    return this.clock ? String(Math.floor(this.clock())) : "-1";
  }

  /**
   * Runs a script for a subject. NO_ACCOUNT, NO_HOLD and the bad-input codes throw their
   * errors here; every other code is the caller's to read.
   */
  run<P>(script: Script<P>, keys: CallSubject, params: P, holdId?: string): Promise<unknown[]> {
    return this.send(script, script.command(this.now(), this.settings, keys, params), (reply) => failureOf(reply, keys.subject, params, holdId));
  }

  /** Closes the connections the runner opened itself (durability's); the user's client stays open. */
  close(): Promise<void> {
    return this.durability ? this.durability.close() : Promise.resolve();
  }

  private async moveDurably<P>(script: Script<P>, keys: CallSubject, params: P, holdId: string | undefined, operationId: string): Promise<unknown[]> {
    const words = script.command(this.now(), this.settings, keys, params);
    const reply = await this.durability!.move(script as Script<unknown>, words, operationId);
    const failure = failureOf(reply, keys.subject, params, holdId);
    if (failure) throw failure;
    return reply;
  }

  /**
   * Sends a built command with the timeout and the NOSCRIPT fallback: one promise per call,
   * settled by the reply, and one timer cleared by it (measured as cheap as no timeout at all,
   * where Promise.race or a shared map of calls in flight cost GC time).
   */
  send(script: Script<unknown>, words: string[], check?: (reply: unknown[]) => Error | undefined): Promise<unknown[]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new StoreUnavailableError(`Quota store did not answer ${script.name} within ${this.timeoutMs} ms`)), this.timeoutMs);
      const fail = (error: unknown) => {
        clearTimeout(timer);
        const detail = error instanceof Error ? error.message : String(error);
        reject(new StoreUnavailableError(`Quota store failed on ${script.name}: ${detail}`, { cause: error }));
      };
      const answer = (reply: unknown) => {
        clearTimeout(timer);
        const failure = check?.(reply as unknown[]);
        if (failure) reject(failure);
        else resolve(reply as unknown[]);
      };
      this.client.send(words).then(answer, (error: unknown) => {
        if (!isNoScriptError(error)) return fail(error);
        const withSource = words.slice();
        withSource[0] = "EVAL";
        withSource[1] = script.source;
        this.client.send(withSource).then(answer, fail);
      });
    });
  }
}

/** The error a reply's code stands for, if it is one of the codes every caller treats alike. */
function failureOf(reply: unknown[], subject: string, params: unknown, holdId: string | undefined): Error | undefined {
  switch (reply[0]) {
    case Code.NO_ACCOUNT:
      return new AccountNotFoundError(subject);
    case Code.NO_HOLD:
      return new HoldNotFoundError(holdId ?? "");
    case Code.UNKNOWN_SURFACE:
      return new InvalidInputError(`Surface "${(params as { surface?: string }).surface}" is not one of the surfaces of "${subject}"'s plan`);
    case Code.WRONG_HOLD_KIND:
      return new InvalidInputError(`Hold "${holdId}" is not of the kind this call settles (items: settle, budget: spend)`);
    case Code.BAD_SETTLEMENT:
      return new InvalidInputError(`optionalSpent is above the optional credits per item of hold "${holdId}"`);
    default:
      return undefined;
  }
}
