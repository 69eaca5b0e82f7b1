/**
 * The one call path of every script: builds the command from the script's header (filling
 * the subject's keys, the settings and "now" by name), sends it, and turns the replies that
 * mean "not there" into their errors once (BullMQ's finishedErrors), so concept modules hold
 * the rule and nothing else. Every failure of the store, and every call slower than the
 * timeout, becomes a StoreUnavailableError so callers fail closed.
 *
 * Scripts run as the functions of the build's library (FCALL), which define the helpers once
 * rather than on every call. A server without the library (fresh, flushed, failed over)
 * answers "Function not found": the library is loaded where the call's key lives and the call
 * sent once more. A server that refuses functions (before Redis 7, an ACL user without them)
 * turns this runner to EVALSHA for good, as `scripts: "eval"` does from the start: EVALSHA,
 * and once more with EVAL on NOSCRIPT.
 */
import { AccountNotFoundError, HoldNotFoundError, InvalidInputError, StoreUnavailableError } from "../errors.ts";
import { functionFailure, isNoScriptError, type RedisScriptClient } from "../redis/client.ts";
import { LIBRARY } from "./bundle.generated.ts";
import { Code } from "./codes.ts";
import type { DurableMovements } from "./durable.ts";
import { evalshaWords, evalWords, type Script, type Settings, type SubjectKeyNames } from "./script.ts";

/** createTollgate's `scripts`: as the functions of one library (FCALL), or by EVALSHA. */
export type ScriptsOption = "functions" | "eval";

/** What a reply's "not found" codes name in their errors. */
export interface CallSubject extends SubjectKeyNames {
  readonly subject: string;
}

export class ScriptRunner {
  /** Whether movements wait for replicas (createTollgate's `durability`). */
  readonly durable: boolean;
  /** FCALL, until functions are refused (or never, with `scripts: "eval"`). */
  private viaFunctions: boolean;
  /** The load in progress, shared by the calls that find the library missing meanwhile. */
  private loading: Promise<boolean> | undefined;

  constructor(
    private readonly client: RedisScriptClient,
    private readonly timeoutMs: number,
    readonly settings: Settings,
    /** Time for the next script: the injected clock in ms, or -1 for the Redis server's TIME. */
    private readonly clock: (() => number) | undefined,
    private readonly durability?: DurableMovements,
    scripts: ScriptsOption = "functions",
  ) {
    this.durable = durability !== undefined;
    this.viaFunctions = scripts === "functions" && typeof client.load === "function";
  }

  /**
   * Runs a credit movement (a charge, a hold opened, settled, spent or ended, the sweep's
   * ends). Without durability it is run itself, so the movement costs what it did; with it,
   * the movement is acknowledged only once the replicas confirmed it,
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
    return this.send(script, script.command(this.now(), this.settings, keys, params, this.viaFunctions), (reply) => failureOf(reply, keys.subject, params, holdId));
  }

  /** Closes the connections the runner opened itself (durability's); the user's client stays open. */
  close(): Promise<void> {
    return this.durability ? this.durability.close() : Promise.resolve();
  }

  private async moveDurably<P>(script: Script<P>, keys: CallSubject, params: P, holdId: string | undefined, operationId: string): Promise<unknown[]> {
    const words = script.command(this.now(), this.settings, keys, params, this.viaFunctions);
    const reply = await this.durability!.move(script as Script<unknown>, words, operationId, this);
    const failure = failureOf(reply, keys.subject, params, holdId);
    if (failure) throw failure;
    return reply;
  }

  /** Functions were refused for good: every later call goes by EVALSHA. */
  refuseFunctions(): void {
    this.viaFunctions = false;
  }

  /**
   * Sends a built command with the timeout, and sends it again where its failure says so
   * (recover): one promise per call, settled by the reply, and one timer cleared by it
   * (measured as cheap as no timeout at all, where Promise.race or a shared map of calls in
   * flight cost GC time).
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
      this.client.send(words).then(answer, (error: unknown) => this.recover(script, words, error).then(answer, fail));
    });
  }

  /**
   * After a failed send, the call again where nothing ran: an FCALL whose function was missing,
   * once the library is loaded; one still missing or refused, by EVALSHA (which answers as it
   * always did); an EVALSHA that met NOSCRIPT, by EVAL. Anything else is the answer.
   */
  private async recover(script: Script<unknown>, words: string[], error: unknown): Promise<unknown> {
    if (words[0] === "FCALL") {
      let failure = functionFailure(error);
      if (failure === "missing" && (await this.loadLibrary(words[3]!))) {
        try {
          return await this.client.send(words);
        } catch (again) {
          failure = functionFailure((error = again));
        }
      }
      if (failure === undefined) throw error;
      if (failure === "refused") this.refuseFunctions();
      words = evalshaWords(script, words);
      try {
        return await this.client.send(words);
      } catch (again) {
        error = again;
      }
    }
    if (!isNoScriptError(error)) throw error;
    return this.client.send(evalWords(script, words));
  }

  /** Loads the library where routingKey lives; false when that failed. */
  private loadLibrary(routingKey: string): Promise<boolean> {
    this.loading ??= this.client.load!(LIBRARY.source, routingKey)
      .then(
        () => true,
        (error: unknown) => {
          if (functionFailure(error) === "refused") this.refuseFunctions();
          return false;
        },
      )
      .finally(() => (this.loading = undefined));
    return this.loading;
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
