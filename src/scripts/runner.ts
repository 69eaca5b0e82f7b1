/**
 * Runs the bundled Lua scripts: EVALSHA first, EVAL once on NOSCRIPT (a restarted or
 * flushed server), keys and arguments passed by the names of the script's header. Every
 * failure of the store, and every call slower than the timeout, becomes a
 * StoreUnavailableError so callers fail closed (SPEC §8).
 */
import { StoreUnavailableError } from "../errors.ts";
import { isNoScriptError, type RedisScriptClient } from "../redis/client.ts";
import { SCRIPTS } from "./bundle.generated.ts";

export type ScriptName = keyof typeof SCRIPTS;
export type ScriptKeys<N extends ScriptName> = Record<(typeof SCRIPTS)[N]["keys"][number], string>;
export type ScriptArgs<N extends ScriptName> = Record<
  (typeof SCRIPTS)[N]["args"][number],
  string | number
>;

export class ScriptRunner {
  constructor(
    private readonly client: RedisScriptClient,
    private readonly timeoutMs: number,
  ) {}

  run<N extends ScriptName>(name: N, keys: ScriptKeys<N>, args: ScriptArgs<N>): Promise<unknown[]> {
    const script = SCRIPTS[name];
    const keyList = script.keys.map((k) => (keys as Record<string, string>)[k]!);
    const argList = script.args.map((a) => String((args as Record<string, string | number>)[a]));
    // One promise and one timer per call, cleared by the call itself: measured as cheap as no
    // timeout at all, where Promise.race or a shared map of calls in flight cost GC time.
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new StoreUnavailableError(`Quota store did not answer ${name} within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      this.call(script, keyList, argList).then(
        (reply) => {
          clearTimeout(timer);
          resolve(reply as unknown[]);
        },
        (error: unknown) => {
          clearTimeout(timer);
          const detail = error instanceof Error ? error.message : String(error);
          reject(new StoreUnavailableError(`Quota store failed on ${name}: ${detail}`, { cause: error }));
        },
      );
    });
  }

  private async call(script: (typeof SCRIPTS)[ScriptName], keys: string[], args: string[]): Promise<unknown> {
    try {
      return await this.client.evalsha(script.sha1, keys, args);
    } catch (error) {
      if (!isNoScriptError(error)) throw error;
      return this.client.eval(script.source, keys, args);
    }
  }
}
