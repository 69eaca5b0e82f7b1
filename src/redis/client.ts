/**
 * All tollgate needs from a Redis client: run a cached script by SHA1, or send its source.
 * Adapters for node-redis and ioredis live beside this file; nothing else in the library
 * knows which client was passed (STYLE: one tiny interface).
 */
export interface RedisScriptClient {
  /** EVALSHA. Rejects with an error whose message starts with "NOSCRIPT" when not cached. */
  evalsha(sha1: string, keys: string[], args: string[]): Promise<unknown>;
  /** EVAL: runs the script and caches it on the server. */
  eval(source: string, keys: string[], args: string[]): Promise<unknown>;
}

export function isNoScriptError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("NOSCRIPT");
}
