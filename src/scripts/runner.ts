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

  /** Calls in flight with their deadlines; one coarse timer fails the late ones. */
  private readonly inFlight = new Map<number, { name: string; deadline: number; fail: (error: Error) => void }>();
  private nextCall = 0;
  private timer: NodeJS.Timeout | undefined;

  run<N extends ScriptName>(name: N, keys: ScriptKeys<N>, args: ScriptArgs<N>): Promise<unknown[]> {
    const script = SCRIPTS[name];
    const keyList = script.keys.map((k) => (keys as Record<string, string>)[k]!);
    const argList = script.args.map((a) => String((args as Record<string, string | number>)[a]));
    return new Promise((resolve, reject) => {
      const id = this.nextCall++;
      let settled = false;
      const settle = (error: Error | undefined, reply?: unknown) => {
        if (settled) return;
        settled = true;
        this.inFlight.delete(id);
        if (error) reject(error);
        else resolve(reply as unknown[]);
      };
      this.inFlight.set(id, { name, deadline: Date.now() + this.timeoutMs, fail: (error) => settle(error) });
      this.watch();
      this.call(script, keyList, argList).then(
        (reply) => settle(undefined, reply),
        (error: unknown) => {
          const detail = error instanceof Error ? error.message : String(error);
          settle(new StoreUnavailableError(`Quota store failed on ${name}: ${detail}`, { cause: error }));
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

  /**
   * One timer for all calls instead of one per call: it ticks at a tenth of the timeout
   * while calls are in flight, so a call fails at most about 10% after its deadline.
   */
  private watch(): void {
    if (this.timer) return;
    const tick = Math.max(5, Math.floor(this.timeoutMs / 10));
    this.timer = setInterval(() => {
      const now = Date.now();
      for (const call of this.inFlight.values()) {
        if (now >= call.deadline) {
          call.fail(new StoreUnavailableError(`Quota store did not answer ${call.name} within ${this.timeoutMs} ms`));
        }
      }
      if (this.inFlight.size === 0) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    }, tick);
    this.timer.unref();
  }
}
