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

/** A credit movement's call: run's, plus the operation id an unconfirmed movement reports. */
export type Move = <P>(script: Script<P>, keys: CallSubject, params: P, holdId: string | undefined, operationId: string) => Promise<unknown[]>;

export class ScriptRunner {
  /**
   * Runs a credit movement (a charge, a hold opened, settled, spent or ended, the sweep's
   * ends). Without durability it is run itself, so the movement costs what it did; with it,
   * the movement is acknowledged only once the replicas confirmed it (src/scripts/durable.ts).
   */
  readonly move: Move;
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
    this.move = durability ? this.moveDurably : this.run;
  }

  /** "now" as the scripts take it. */
  now(): string {
    return this.clock ? String(Math.floor(this.clock())) : "-1";
  }

  /**
   * Runs a script for a subject. NO_ACCOUNT, NO_HOLD and the bad-input codes throw their
   * errors here; every other code is the caller's to read.
   */
  async run<P>(script: Script<P>, keys: CallSubject, params: P, holdId?: string): Promise<unknown[]> {
    return this.answer(await this.send(script, script.command(this.now(), this.settings, keys, params)), keys, params, holdId);
  }

  /** Closes the connections the runner opened itself (durability's); the user's client stays open. */
  close(): Promise<void> {
    return this.durability ? this.durability.close() : Promise.resolve();
  }

  private async moveDurably<P>(script: Script<P>, keys: CallSubject, params: P, holdId: string | undefined, operationId: string): Promise<unknown[]> {
    const words = script.command(this.now(), this.settings, keys, params);
    return this.answer(await this.durability!.move(script as Script<unknown>, words, operationId), keys, params, holdId);
  }

  private answer<P>(reply: unknown[], keys: CallSubject, params: P, holdId: string | undefined): unknown[] {
    switch (reply[0]) {
      case Code.NO_ACCOUNT:
        throw new AccountNotFoundError(keys.subject);
      case Code.NO_HOLD:
        throw new HoldNotFoundError(holdId ?? "");
      case Code.UNKNOWN_SURFACE:
        throw new InvalidInputError(`Surface "${(params as { surface?: string }).surface}" is not one of the surfaces of "${keys.subject}"'s plan`);
      case Code.WRONG_HOLD_KIND:
        throw new InvalidInputError(`Hold "${holdId}" is not of the kind this call settles (items: settle, budget: spend)`);
      case Code.BAD_SETTLEMENT:
        throw new InvalidInputError(`optionalSpent is above the optional credits per item of hold "${holdId}"`);
      default:
        return reply;
    }
  }

  /** Sends a built command, with the timeout and the NOSCRIPT fallback. */
  send(script: Script<unknown>, words: string[]): Promise<unknown[]> {
    // One promise and one timer per call, cleared by the call itself: measured as cheap as no
    // timeout at all, where Promise.race or a shared map of calls in flight cost GC time.
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new StoreUnavailableError(`Quota store did not answer ${script.name} within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      this.sendOnce(script, words).then(
        (reply) => {
          clearTimeout(timer);
          resolve(reply as unknown[]);
        },
        (error: unknown) => {
          clearTimeout(timer);
          const detail = error instanceof Error ? error.message : String(error);
          reject(new StoreUnavailableError(`Quota store failed on ${script.name}: ${detail}`, { cause: error }));
        },
      );
    });
  }

  private async sendOnce(script: Script<unknown>, words: string[]): Promise<unknown> {
    try {
      return await this.client.send(words);
    } catch (error) {
      if (!isNoScriptError(error)) throw error;
      const withSource = words.slice();
      withSource[0] = "EVAL";
      withSource[1] = script.source;
      return this.client.send(withSource);
    }
  }
}
