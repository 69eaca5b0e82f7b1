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

  async run<N extends ScriptName>(
    name: N,
    keys: ScriptKeys<N>,
    args: ScriptArgs<N>,
  ): Promise<unknown[]> {
    const script = SCRIPTS[name];
    const keyList = script.keys.map((k) => (keys as Record<string, string>)[k]!);
    const argList = script.args.map((a) => String((args as Record<string, string | number>)[a]));
    const reply = await this.withTimeout(name, this.call(script, keyList, argList));
    return reply as unknown[];
  }

  private async call(
    script: (typeof SCRIPTS)[ScriptName],
    keys: string[],
    args: string[],
  ): Promise<unknown> {
    try {
      return await this.client.evalsha(script.sha1, keys, args);
    } catch (error) {
      if (!isNoScriptError(error)) throw error;
      return this.client.eval(script.source, keys, args);
    }
  }

  private withTimeout(name: string, pending: Promise<unknown>): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new StoreUnavailableError(`Quota store did not answer ${name} within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
    });
    return Promise.race([pending, timeout])
      .catch((error: unknown) => {
        if (error instanceof StoreUnavailableError) throw error;
        const detail = error instanceof Error ? error.message : String(error);
        throw new StoreUnavailableError(`Quota store failed on ${name}: ${detail}`, { cause: error });
      })
      .finally(() => clearTimeout(timer));
  }
}
