/**
 * The one call path of every script: builds the command from the script's header (filling
 * the subject's keys, the settings and "now" by name), sends it, and turns the replies that
 * mean "not there" into their errors once (BullMQ's finishedErrors), so concept modules hold
 * the rule and nothing else. Every failure of the store, and every call slower than the
 * timeout, becomes a StoreUnavailableError so callers fail closed.
 *
 * Scripts run as the functions of the build's library (FCALL), which define the helpers once
 * rather than on every call. A call that failed where nothing ran is sent again by the one
 * recovery ladder, which durable movements share: a moving slot
 * after a backoff, within the timeout; a missing library once loaded; EVALSHA where
 * functions are refused (for good, as `scripts: "eval"` does from the start); EVAL after
 * NOSCRIPT.
 */
import { AccountNotFoundError, HoldNotFoundError, InvalidInputError, operationReused, StoreUnavailableError } from '../errors.ts';
import { functionFailure, type RedisScriptClient } from '../redis/client.ts';
import { asError } from '../redis/dedicated.ts';
import { LIBRARY } from './bundle.generated.ts';
import { Code } from './codes.ts';
import type { DurableMovements } from './durable.ts';
import { recover } from './recovery.ts';
import type { AnyScript, Script, ScriptReply, Settings, SubjectKeyNames } from './script.ts';

/** createTollgate's `scripts`: as the functions of one library (FCALL), or by EVALSHA. */
export type ScriptsOption = 'functions' | 'eval';

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
  /**
   * Called after a script reports events it wrote to a subject's outbox or dropped
   * (src/events/outbox.ts), without the caller waiting for it.
   */
  onEvents: ((subject: string, written: number, dropped: number) => void) | undefined;

  constructor(
    private readonly client: RedisScriptClient,
    private readonly timeoutMs: number,
    readonly settings: Settings,
    /** Time for the next script: the injected clock in ms, or -1 for the Redis server's TIME. */
    private readonly clock: (() => number) | undefined,
    private readonly durability?: DurableMovements,
    scripts: ScriptsOption = 'functions',
  ) {
    this.durable = durability !== undefined;
    this.viaFunctions = scripts === 'functions' && typeof client.load === 'function';
  }

  /** A sender per server to read every key from (SCAN): each master of a cluster, or the one server. */
  async servers(): Promise<Array<(words: string[]) => Promise<unknown>>> {
    return (await this.client.servers?.()) ?? [(words) => this.client.send(words)];
  }

  /**
   * Runs a credit movement (a charge, a hold opened, settled, spent or ended, the sweep's
   * ends). Without durability it is run itself, so the movement costs what it did; with it,
   * the movement is acknowledged only once the replicas confirmed it,
   * and operationId is what an unconfirmed movement reports to retry with.
   */
  move<P, R extends ScriptReply>(script: Script<P, R>, keys: CallSubject, params: P, holdId: string | undefined, operationId: string): Promise<R> {
    if (this.durability) return this.moveDurably(script, keys, params, holdId, operationId);
    // A movement that failed carries its id, so the caller may retry it: it applies once.
    return this.run(script, keys, params, holdId).catch((error: unknown) => {
      throw error instanceof StoreUnavailableError && error.operationId === undefined && operationId !== ''
        ? new StoreUnavailableError(error.message, { cause: error.cause, operationId })
        : error;
    });
  }

  /** "now" as the scripts take it. */
  now(): string {
    return this.clock ? String(Math.floor(this.clock())) : '-1';
  }

  /**
   * Runs a script for a subject. NO_ACCOUNT, NO_HOLD and the bad-input codes throw their
   * errors here; every other code is the caller's to read.
   */
  run<P, R extends ScriptReply>(script: Script<P, R>, keys: CallSubject, params: P, holdId?: string): Promise<R> {
    const sent = this.send(script, script.command(this.now(), this.settings, keys, params, this.viaFunctions), (reply) =>
      failureOf(reply, keys.subject, params, holdId),
    );
    return this.onEvents ? sent.then((reply) => this.noteEvents(keys.subject, reply)) : sent;
  }

  /** Hands the events a reply reports to onEvents; the reply goes on as it came. */
  private noteEvents<R extends ScriptReply>(subject: string, reply: R): R {
    const { events, eventsDropped } = reply as { events?: number; eventsDropped?: number };
    if ((events ?? 0) + (eventsDropped ?? 0) > 0) this.onEvents!(subject, events ?? 0, eventsDropped ?? 0);
    return reply;
  }

  /** Closes the connections the runner opened itself (durability's); the user's client stays open. */
  close(): Promise<void> {
    return this.durability ? this.durability.close() : Promise.resolve();
  }

  private async moveDurably<P, R extends ScriptReply>(
    script: Script<P, R>,
    keys: CallSubject,
    params: P,
    holdId: string | undefined,
    operationId: string,
  ): Promise<R> {
    const words = script.command(this.now(), this.settings, keys, params, this.viaFunctions);
    const reply = await this.durability!.move(script, words, operationId, this);
    const failure = failureOf(reply, keys.subject, params, holdId);
    if (failure) throw failure;
    const decoded = script.decode(reply);
    return this.onEvents ? this.noteEvents(keys.subject, decoded) : decoded;
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
  send<R extends ScriptReply>(script: Script<never, R>, words: string[], check?: (reply: readonly unknown[]) => Error | undefined): Promise<R> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new StoreUnavailableError(`Quota store did not answer ${script.name} within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      const fail = (error: unknown) => {
        clearTimeout(timer);
        const detail = error instanceof Error ? error.message : String(error);
        reject(new StoreUnavailableError(`Quota store failed on ${script.name}: ${detail}`, { cause: error }));
      };
      const answer = (reply: unknown) => {
        clearTimeout(timer);
        if (!Array.isArray(reply)) return reject(new StoreUnavailableError(`Quota store answered ${script.name} with ${String(reply)}`));
        const failure = check?.(reply);
        if (failure) return reject(failure);
        try {
          resolve(script.decode(reply));
        } catch (error) {
          reject(error);
        }
      };
      const deadline = Date.now() + this.timeoutMs;
      this.client.send(words).then(answer, (error: unknown) => this.recover(script, words, error, deadline).then(answer, fail));
    });
  }

  /**
   * After a failed send, the call again where nothing ran, within
   * the call's timeout; the last failure is the answer.
   */
  private async recover(script: AnyScript, words: string[], error: unknown, deadline: number): Promise<unknown> {
    const outcome = await recover<unknown>(script, words, asError(error), {
      send: (again) => this.client.send(again).catch(asError),
      errorOf: (o) => (o instanceof Error ? o : undefined),
      load: (routingKey) => this.loadLibrary(routingKey),
      refuseFunctions: () => this.refuseFunctions(),
      deadline,
    });
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }

  /** Loads the library where routingKey lives; false when that failed. */
  private loadLibrary(routingKey: string): Promise<boolean> {
    this.loading ??= this.client.load!(LIBRARY.source, routingKey)
      .then(
        () => true,
        (error: unknown) => {
          if (functionFailure(error) === 'refused') this.refuseFunctions();
          return false;
        },
      )
      .finally(() => (this.loading = undefined));
    return this.loading;
  }
}

/** The error a reply's code stands for, if it is one of the codes every caller treats alike. */
function failureOf(reply: readonly unknown[], subject: string, params: unknown, holdId: string | undefined): Error | undefined {
  switch (reply[0]) {
    case Code.NO_ACCOUNT:
      return new AccountNotFoundError(subject);
    case Code.NO_HOLD:
      return new HoldNotFoundError(holdId ?? '');
    case Code.UNKNOWN_SURFACE:
      return new InvalidInputError(`Surface "${(params as { surface?: string }).surface}" is not one of the surfaces of "${subject}"'s plan`);
    case Code.WRONG_HOLD_KIND:
      return new InvalidInputError(`Hold "${holdId}" is not of the kind this call settles (items: settle, budget: spend)`);
    case Code.BAD_SETTLEMENT:
      return new InvalidInputError(`optionalSpent is above the optional credits per item of hold "${holdId}"`);
    case Code.OPERATION_REUSED:
      return operationReused((params as { operationId: string }).operationId);
    default:
      return undefined;
  }
}
