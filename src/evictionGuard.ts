/**
 * The eviction guard. A Redis server under memory pressure evicts keys unless its
 * maxmemory-policy is `noeviction`; an evicted account, hold or operation id loses credits or
 * charges a retry twice. So before the first credit movement or account creation, the guard
 * reads `INFO memory` on every master, and lets them run only when each one says
 * `maxmemory_policy:noeviction`. Any other policy, or an INFO the server refuses, is unsafe:
 * movements throw EvictionPolicyError, and the process is warned once. Admits never wait for
 * the guard (an evicted window counter only resets its window).
 *
 * The finding holds until the client reconnects (a failover may promote a server with another
 * policy), so a movement costs nothing more once the servers have been read. An unsafe
 * finding is read again after a second, so a server fixed with CONFIG SET is seen without a
 * restart. `acceptEviction: true` turns the guard off.
 */
import { EvictionPolicyError, StoreUnavailableError } from './errors.ts';
import type { RedisScriptClient } from './redis/client.ts';

/** How long an unsafe finding stands before the servers are read again (ms). */
const RECHECK_MS = 1_000;

const SAFE_POLICY = 'noeviction';

export class EvictionGuard {
  /** True while every master is known to keep its keys: movements go straight on. */
  safe: boolean;
  private reading: Promise<void> | undefined;
  private inFlight = false;
  private unsafeSince = 0;
  private warned = false;
  /** Held here: the client holds it weakly (src/redis/client.ts sharedReconnects). */
  private readonly reconnected = () => this.forget();

  constructor(
    private readonly redis: RedisScriptClient,
    /** false: the guard is off (createTollgate's acceptEviction). */
    private readonly on: boolean,
    private readonly timeoutMs: number,
    /** This process's time (the injected clock, or Date.now()), for the re-read of an unsafe finding. */
    private readonly now: () => number,
  ) {
    this.safe = !on;
    if (on) redis.onReconnect?.(this.reconnected);
  }

  /**
   * Forgets what was read: the next movement reads the servers again. A read under way already
   * reads through the new connections, so it stands.
   */
  forget(): void {
    if (!this.on || this.inFlight) return;
    this.safe = false;
    this.reading = undefined;
  }

  /**
   * Resolves once every master keeps its keys; rejects with EvictionPolicyError when one may
   * evict them, or StoreUnavailableError when the servers could not be reached (nothing is
   * remembered then).
   */
  ready(): Promise<void> {
    if (this.safe) return Promise.resolve();
    if (this.reading === undefined || (this.unsafeSince > 0 && this.now() - this.unsafeSince >= RECHECK_MS)) {
      this.unsafeSince = 0;
      this.inFlight = true;
      const reading = this.read();
      this.reading = reading;
      reading.then(
        () => {
          this.inFlight = false;
          if (this.reading === reading) this.safe = true;
        },
        (error: unknown) => {
          this.inFlight = false;
          if (this.reading !== reading) return;
          if (error instanceof EvictionPolicyError) this.unsafeSince = this.now();
          else this.reading = undefined;
        },
      );
    }
    return this.reading;
  }

  private async read(): Promise<void> {
    const words = ['INFO', 'memory'];
    let replies: Array<{ server: string; reply: unknown }>;
    try {
      replies = await withTimeout(
        this.redis.everyMaster ? this.redis.everyMaster(words) : this.redis.send(words).then((reply) => [{ server: 'the Redis server', reply }]),
        this.timeoutMs,
      );
    } catch (error) {
      // An error the server answered (NOPERM, ERR unknown command, ...) is a refusal: unsafe.
      if (isServerReply(error)) throw this.unsafe('unknown', 'the Redis server', error);
      throw new StoreUnavailableError(`The quota store could not be read (INFO): ${(error as Error)?.message ?? String(error)}`, { cause: error });
    }
    for (const { server, reply } of replies) {
      const policy = policyOf(reply);
      if (policy !== SAFE_POLICY) throw this.unsafe(policy, server);
    }
  }

  private unsafe(policy: string, server: string, cause?: unknown): EvictionPolicyError {
    const error = new EvictionPolicyError(policy, server, cause === undefined ? undefined : { cause });
    if (!this.warned) {
      this.warned = true;
      process.emitWarning(`${error.message} Admits keep working: an evicted window counter only resets its window.`, { code: 'TOLLGATE_EVICTION_POLICY' });
    }
    return error;
  }
}

/** The maxmemory_policy line of an INFO reply, or "unknown". */
function policyOf(reply: unknown): string {
  // A string, a Buffer, or RESP3's verbatim string (a String object).
  const text = reply instanceof Uint8Array ? Buffer.from(reply).toString() : String(reply ?? '');
  const match = /^maxmemory_policy:(\S+)/m.exec(text);
  return match ? match[1]! : 'unknown';
}

/** An error reply of the server (its message starts with an upper-case code), not a failed connection. */
function isServerReply(error: unknown): boolean {
  return error instanceof Error && /^[A-Z]{2,}[A-Z_]* /.test(error.message) && !/^(LOADING|BUSY|CLUSTERDOWN|TRYAGAIN|MASTERDOWN) /.test(error.message);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
