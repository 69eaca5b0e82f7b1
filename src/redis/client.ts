/**
 * All tollgate needs from a Redis client: send one command, given as its words, and get the
 * reply. Scripts go as ["FCALL", function, numkeys, key1, ..., arg1, ...] or ["EVALSHA",
 * sha1, ...]; on a cluster the adapter routes a command by its first key (words[3] of a
 * script). Adapters for node-redis and ioredis live beside this file; nothing else in the
 * library knows which client was passed (one tiny interface).
 */
export interface RedisScriptClient {
  /** Sends the command; rejects with the server's error (e.g. one starting "NOSCRIPT"). */
  send(words: string[]): Promise<unknown>;
  /**
   * Loads the function library (FUNCTION LOAD REPLACE) where routingKey lives: on a cluster,
   * its master at least. Without it, scripts run by EVALSHA.
   */
  load?(library: string, routingKey: string): Promise<unknown>;
  /**
   * Opens a connection of tollgate's own, for durable credit movements (createTollgate's
   * `durability`): a movement's script and its WAIT go together on it, so WAIT confirms that
   * script's writes and blocks no other command. Both adapters open one by duplicating the
   * client; a client without it cannot be durable.
   */
  dedicated?(): Promise<DedicatedConnection>;
  /**
   * On a cluster, a sender per master, for the commands that read every server (SCAN, for
   * accounts.list and accounts.delete). Absent on one server: `send` reaches it.
   */
  servers?(): Promise<Array<(words: string[]) => Promise<unknown>>>;
  /**
   * Sends a command that names no key (INFO) to every master, one server for a client that is
   * not a cluster, and resolves with each master's reply and address. Without it, the command
   * goes through `send` to one server.
   */
  everyMaster?(words: string[]): Promise<Array<{ server: string; reply: unknown }>>;
  /**
   * Calls `listener` each time a connection of the client is (re)established, so tollgate reads
   * again what a server it reconnects to may have changed (its maxmemory-policy). The listener
   * is held weakly (sharedReconnects): the caller keeps it alive as long as it wants the calls.
   */
  onReconnect?(listener: () => void): void;
}

/** Per client, the listeners of every tollgate made on it, held weakly. */
const reconnectListeners = new WeakMap<object, Set<WeakRef<() => void>>>();

/**
 * onReconnect for `client` that puts one listener on the client however many tollgates share
 * it (so a process that makes many of them gets no MaxListeners warning), and holds each
 * tollgate's listener weakly, so a tollgate that is dropped is not kept alive by its client.
 * `subscribe` adds the one real listener, on the first registration.
 */
export function sharedReconnects(client: object, subscribe: (fire: () => void) => void): (listener: () => void) => void {
  return (listener) => {
    let listeners = reconnectListeners.get(client);
    if (listeners === undefined) {
      const registered = new Set<WeakRef<() => void>>();
      listeners = registered;
      reconnectListeners.set(client, registered);
      subscribe(() => {
        for (const ref of registered) {
          const alive = ref.deref();
          if (alive === undefined) registered.delete(ref);
          else alive();
        }
      });
    }
    listeners.add(new WeakRef(listener));
  };
}

/** A connection (on a cluster, one per master, opened when first needed) that tollgate alone uses. */
export interface DedicatedConnection {
  /**
   * Sends the commands back to back on one connection to the server that owns routingKey (on a
   * cluster the master of its slot, following one MOVED or ASK, so that a WAIT among them
   * runs where the script before it ran) and resolves with their replies in order. A command
   * that failed answers with its Error in its place.
   */
  pipeline(routingKey: string, commands: string[][]): Promise<unknown[]>;
  /** Closes the connection (createTollgate's `close()` calls it). */
  close(): Promise<void>;
}

export function isNoScriptError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * What a failed FCALL or FUNCTION LOAD means for sending the call again. "missing": the server
 * has no library (fresh, flushed, failed over). "refused": it refuses functions for good (no
 * FUNCTION or FCALL: before Redis 7, renamed, an ACL user without them; or it will not take
 * the library). "before": refused before the function ran, by a check EVALSHA meets only at a
 * script's first write (maxmemory, a read-only or stale replica, a failed save) or by an ACL
 * check; errors raised inside a function name it after " script: ". Otherwise undefined.
 */
export function functionFailure(error: unknown): 'missing' | 'refused' | 'before' | undefined {
  const message = error instanceof Error ? error.message : '';
  if (message.startsWith('ERR Function not found')) return 'missing';
  if (/^(NOPERM this user has no permissions to run the '(fcall|function)|ERR (unknown (sub)?command|Error (registering|compiling)))/i.test(message))
    return 'refused';
  if (/^(NOPERM|OOM|READONLY|MISCONF|MASTERDOWN) /.test(message) && !message.includes(' script: ')) return 'before';
  return undefined;
}

/** True for an object that is a RedisScriptClient (what fromNodeRedis / fromIoredis return). */
export function isScriptClient(value: unknown): value is RedisScriptClient {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { send?: unknown }).send === 'function' &&
    (value as { [ADAPTED]?: unknown })[ADAPTED] === true
  );
}

/** Marks the adapters' objects, so that a raw client passed by mistake is told apart. */
export const ADAPTED = Symbol.for('tollgate.redisScriptClient');

let warnedUnheard = false;

/**
 * Warns once per process when the client has no 'error' listener: a client emits 'error' when
 * its connection fails, and an event nobody listens to ends the process, where tollgate would
 * have answered 503.
 */
export function warnWithoutErrorListener(client: unknown, adapter: string): void {
  const listenerCount = (client as { listenerCount?: (event: string) => number }).listenerCount;
  if (warnedUnheard || typeof listenerCount !== 'function' || listenerCount.call(client, 'error') > 0) return;
  warnedUnheard = true;
  process.emitWarning(
    `The Redis client passed to ${adapter} has no 'error' listener: when Redis goes down it will end the process instead of tollgate answering 503. Add one first: client.on("error", (error) => log(error)).`,
    { code: 'TOLLGATE_NO_ERROR_LISTENER' },
  );
}
