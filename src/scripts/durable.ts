/**
 * Durable credit movements (createTollgate's `durability`): a movement is acknowledged only
 * once WAIT says `replicas` replicas have it, so a replica promoted after the primary is lost
 * holds every movement a caller was told of. WAIT cannot run inside a script (Redis refuses
 * it), confirms only what its own connection wrote, and blocks that connection while it
 * waits; so each movement's script and a WAIT go pipelined on a connection of tollgate's own
 * (a small pool, opened from the user's client when first needed), and admits and reads
 * stay on the shared connection and never wait. A movement not confirmed in time is an
 * UnconfirmedError with the operation id it used, for the caller's retry, which applies once.
 */
import { UnconfirmedError } from '../errors.ts';
import { functionFailure, type DedicatedConnection, type RedisScriptClient } from '../redis/client.ts';
import { LIBRARY } from './bundle.generated.ts';
import { Code } from './codes.ts';
import { recover } from './recovery.ts';
import type { AnyScript } from './script.ts';

export interface DurabilitySettings {
  /** Replicas that must confirm each movement (WAIT numreplicas). */
  replicas: number;
  /** How long WAIT waits for them (WAIT timeout). */
  waitMs: number;
  /** Connections of tollgate's own; each carries one movement at a time. */
  connections: number;
  /** A movement with no answer after this long is unconfirmed (the store's timeout + waitMs). */
  deadlineMs: number;
}

/** Replies that acknowledge a movement: made now (OK) or earlier (the others). */
const ACKNOWLEDGED = new Set<unknown>([Code.OK, Code.REPLAYED, Code.HOLD_ENDED, Code.LEASE_EXPIRED]);
/** Replies that report a movement made earlier, maybe by a call that was not confirmed. */
const EARLIER = new Set<unknown>([Code.REPLAYED, Code.HOLD_ENDED, Code.LEASE_EXPIRED]);

interface Slot {
  connection: Promise<DedicatedConnection> | undefined;
  /** Movements sent on this connection and not answered yet. */
  busy: number;
}

export class DurableMovements {
  private readonly pool: Slot[];
  private readonly wait: string[];
  private closed = false;

  constructor(
    private readonly client: RedisScriptClient,
    private readonly settings: DurabilitySettings,
  ) {
    this.pool = Array.from({ length: settings.connections }, () => ({ connection: undefined, busy: 0 }));
    this.wait = ['WAIT', String(settings.replicas), String(settings.waitMs)];
  }

  /**
   * Runs a movement's command and answers its reply once the replicas confirmed it. Replies
   * that move nothing (insufficient, not found, refusals) are answered as they come: there is
   * nothing to confirm. An FCALL that fails before it runs is sent again as the runner's are.
   */
  move(script: AnyScript, words: string[], operationId: string, runner: { refuseFunctions(): void }): Promise<unknown[]> {
    const slot = this.leastBusy();
    slot.busy++;
    const attempt = this.attempt(slot, script, words, operationId, runner);
    attempt.then(
      () => slot.busy--,
      () => slot.busy--,
    );
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(this.unconfirmed(script, operationId, `no answer within ${this.settings.deadlineMs} ms`)),
        this.settings.deadlineMs,
      );
      attempt.then(
        (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(
            error instanceof UnconfirmedError ? error : this.unconfirmed(script, operationId, error instanceof Error ? error.message : String(error), error),
          );
        },
      );
    });
  }

  /** Closes the connections tollgate opened; movements after this fail as unconfirmed. */
  async close(): Promise<void> {
    this.closed = true;
    const open = this.pool.map((slot) => slot.connection).filter((c) => c !== undefined);
    for (const slot of this.pool) slot.connection = undefined;
    await Promise.all(
      open.map((c) =>
        c.then(
          (connection) => connection.close(),
          () => undefined,
        ),
      ),
    );
  }

  private async attempt(slot: Slot, script: AnyScript, words: string[], operationId: string, runner: { refuseFunctions(): void }): Promise<unknown[]> {
    const connection = await this.connection(slot);
    const routingKey = words[3]!;
    const deadline = Date.now() + this.settings.deadlineMs;
    // The script and a WAIT, back to back: [its reply, the replicas that confirmed it].
    const send = (commands: string[]) => connection.pipeline(routingKey, [commands, this.wait]);
    let [reply, confirmed] = await send(words);
    if (reply instanceof Error) {
      [reply, confirmed] = await recover(script, words, [reply, confirmed], {
        send,
        errorOf: ([first]) => (first instanceof Error ? first : undefined),
        // Loaded on the server this connection sends the key's commands to.
        load: async (key) => {
          const [loaded] = await connection.pipeline(key, [['FUNCTION', 'LOAD', 'REPLACE', LIBRARY.source]]);
          if (functionFailure(loaded) === 'refused') runner.refuseFunctions();
          return !(loaded instanceof Error);
        },
        refuseFunctions: () => runner.refuseFunctions(),
        deadline,
      });
    }
    if (reply instanceof Error) throw reply;
    if (!Array.isArray(reply)) throw new Error(`${script.name} answered ${String(reply)}`);
    if (!ACKNOWLEDGED.has(reply[0])) return reply;
    if (EARLIER.has(reply[0])) {
      // The earlier movement may have come from another connection, and a WAIT covers its own
      // connection's writes (Redis 7.2 on: only its writes that were propagated): write once
      // more here, so the WAIT after it covers the earlier movement too.
      [, confirmed] = await connection.pipeline(routingKey, [syncCommand(routingKey), this.wait]);
    }
    if (typeof confirmed !== 'number' || confirmed < this.settings.replicas) {
      const seen =
        confirmed instanceof Error
          ? `WAIT failed: ${confirmed.message}`
          : `${String(confirmed)} of ${this.settings.replicas} replicas confirmed it within ${this.settings.waitMs} ms`;
      throw this.unconfirmed(script, operationId, seen);
    }
    return reply;
  }

  private connection(slot: Slot): Promise<DedicatedConnection> {
    if (this.closed) return Promise.reject(new Error('tollgate was closed'));
    if (slot.connection === undefined) {
      const opening = this.client.dedicated!();
      slot.connection = opening;
      // One that could not be opened is tried afresh by the next movement.
      opening.catch(() => {
        if (slot.connection === opening) slot.connection = undefined;
      });
    }
    return slot.connection;
  }

  private leastBusy(): Slot {
    let best = this.pool[0]!;
    for (const slot of this.pool) {
      if (slot.busy === 0) return slot;
      if (slot.busy < best.busy) best = slot;
    }
    return best;
  }

  private unconfirmed(script: AnyScript, operationId: string, detail: string, cause?: unknown): UnconfirmedError {
    return new UnconfirmedError(
      operationId,
      `${script.name} "${operationId}" is not confirmed (${detail}); retry with the same id, it applies once`,
      cause === undefined ? undefined : { cause },
    );
  }
}

/**
 * A write in routingKey's slot that changes nothing anyone reads: a short-lived key beside it
 * (wrapped in a hash tag when routingKey has none, so it stays in that slot).
 */
function syncCommand(routingKey: string): string[] {
  const open = routingKey.indexOf('{');
  const tagged = open >= 0 && routingKey.indexOf('}', open + 1) > open + 1;
  return ['SET', tagged ? `${routingKey}:sync` : `{${routingKey}}:sync`, '1', 'PX', '1000'];
}
