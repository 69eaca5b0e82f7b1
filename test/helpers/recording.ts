// A RedisScriptClient that passes every command through to a real adapter and notes it, so a
// test can say how many commands a call sent (one round trip, none at all) and which scripts
// ran with which keys.
import { ADAPTED, functionFailure, isNoScriptError, type RedisScriptClient } from '../../src/redis/client.ts';
import * as bundle from '../../src/scripts/bundle.generated.ts';
import { LIBRARY } from '../../src/scripts/bundle.generated.ts';
import type { Script } from '../../src/scripts/script.ts';
import { createTollgate, type Tollgate, type TollgateOptions } from '../../src/index.ts';
import { EXAMPLE_PLANS } from './plans.ts';
import { uniquePrefix } from './redis.ts';
import { ManualClock, connectTestClient, type Backend, type TestClient } from './tollgate.ts';

/** Every bundled script by name. */
export const SCRIPTS: Record<string, Script<unknown>> = Object.fromEntries(
  Object.entries(bundle as unknown as Record<string, Script<unknown>>).filter(([, s]) => typeof s === 'object' && typeof s.sha1 === 'string'),
);
export type ScriptName = keyof typeof bundle;

const bySha = new Map(Object.entries(SCRIPTS).map(([name, s]) => [s.sha1, name]));
const bySource = new Map(Object.entries(SCRIPTS).map(([name, s]) => [s.source, name]));
const byFunction = new Map(Object.entries(SCRIPTS).map(([name, s]) => [s.fn, name]));
const SCRIPT_VERBS = new Set(['FCALL', 'EVALSHA', 'EVAL']);

export interface SentCommand {
  words: string[];
  /** FCALL, EVALSHA or EVAL: the script's name (undefined for anything else). */
  script: string | undefined;
  /** The script's keys (words[3 .. 3 + numkeys)). */
  keys: string[];
  /**
   * The server did not have the script: it answered NOSCRIPT to an EVALSHA (no cached copy,
   * e.g. another test file flushed the script cache) and the runner sent it again with EVAL,
   * or "Function not found" to an FCALL and the runner loaded the library and sent it again.
   * Not a round trip of the call.
   */
  noscript: boolean;
}

export interface Recorder {
  client: RedisScriptClient;
  /** Every command sent, in order. */
  sent: SentCommand[];
  /** The commands that ran: sent ones less those the server did not have the script for. */
  readonly calls: SentCommand[];
  /** The routing key of each FUNCTION LOAD of the library, in order. */
  loads: string[];
  /** Forget what was sent so far. */
  clear(): void;
}

/** The script a command runs, by FCALL, EVALSHA or EVAL, or undefined for any other command. */
export function scriptOf(words: readonly string[]): string | undefined {
  const verb = words[0]!.toUpperCase();
  return verb === 'FCALL' ? byFunction.get(words[1]!) : verb === 'EVALSHA' ? bySha.get(words[1]!) : verb === 'EVAL' ? bySource.get(words[1]!) : undefined;
}

/** Wraps an adapted client; `inner` may be undefined for a client that must never be used. */
export function recording(inner: RedisScriptClient | undefined): Recorder {
  const sent: SentCommand[] = [];
  const loads: string[] = [];
  const client = {
    [ADAPTED]: true,
    send(words: string[]) {
      const numkeys = SCRIPT_VERBS.has(words[0]!.toUpperCase()) ? Number(words[2]) : 0;
      const command: SentCommand = { words: [...words], script: scriptOf(words), keys: words.slice(3, 3 + numkeys), noscript: false };
      sent.push(command);
      if (!inner) return Promise.reject(new Error('this client must not be used'));
      return inner.send(words).catch((error: unknown) => {
        if (isNoScriptError(error) || functionFailure(error) === 'missing') command.noscript = true;
        throw error;
      });
    },
    ...(inner?.load && {
      load(library: string, routingKey: string) {
        loads.push(routingKey);
        return inner.load!(library, routingKey);
      },
    }),
    // The eviction guard's INFO and the SCANs of accounts.list and accounts.delete go to the
    // inner client unrecorded: `sent` holds the scripts.
    ...(inner?.everyMaster && { everyMaster: (words: string[]) => inner.everyMaster!(words) }),
    ...(inner?.servers && { servers: () => inner.servers!() }),
    ...(inner?.onReconnect && { onReconnect: (listener: () => void) => inner.onReconnect!(listener) }),
  } as RedisScriptClient;
  return {
    client,
    sent,
    loads,
    get calls() {
      return sent.filter((c) => !c.noscript);
    },
    clear: () => {
      sent.length = 0;
      loads.length = 0;
    },
  };
}

export interface RecordingGate {
  tg: Tollgate;
  clock: ManualClock;
  prefix: string;
  /** Whether it is on Redis (false: memory, which sends nothing and has nothing to send to). */
  onRedis: boolean;
  recorder: Recorder;
  /** Commands that ran since the last clear() (see Recorder.calls). */
  readonly sent: SentCommand[];
  /** A raw command on the test Redis (not recorded). */
  command(args: string[]): Promise<unknown>;
  client: TestClient | undefined;
  close(): Promise<void>;
}

/** A tollgate with an injected clock whose every Redis command is recorded. */
export async function openRecordingTollgate(kind: Backend, name: string, options: Partial<TollgateOptions> = {}): Promise<RecordingGate> {
  if (kind === 'memory') {
    const clock = new ManualClock();
    const recorder = recording(undefined);
    return {
      tg: createTollgate({ memory: true, plans: EXAMPLE_PLANS, clock: clock.fn, ...options }),
      clock,
      prefix: uniquePrefix(name),
      onRedis: false,
      recorder,
      get sent() {
        return recorder.calls;
      },
      command: async () => {
        throw new Error('A tollgate in memory has no Redis to send a command to');
      },
      client: undefined,
      close: async () => {},
    };
  }
  const client = await connectTestClient(kind);
  // Loaded up front (on every master of a cluster), so counts are of calls, not of first loads.
  await client.command(['FUNCTION', 'LOAD', 'REPLACE', LIBRARY.source]);
  for (const script of Object.values(SCRIPTS)) await client.command(['SCRIPT', 'LOAD', script.source]);
  const recorder = recording(client.adapter);
  const clock = new ManualClock();
  const prefix = uniquePrefix(name);
  return {
    tg: createTollgate({ plans: EXAMPLE_PLANS, prefix, clock: clock.fn, ...options, redis: recorder.client }),
    clock,
    prefix,
    onRedis: true,
    recorder,
    get sent() {
      return recorder.calls;
    },
    command: (args) => client.command(args),
    client,
    close: () => client.close(),
  };
}

/** Every key stored for a subject under a prefix (every master of a cluster is asked). */
export async function storedKeys(command: (args: string[]) => Promise<unknown>, prefix: string, subject: string): Promise<string[]> {
  return ((await command(['KEYS', `${prefix}:{${subject}}:*`])) as string[]).sort();
}
