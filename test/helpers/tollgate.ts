// A tollgate on the test Redis with an injected clock, through either client (SPEC §1: both
// node-redis and ioredis are supported, so core tests run through both).
import { createTollgate, fromIoredis, fromNodeRedis, type Tollgate, type TollgateOptions } from '../../src/index.ts';
import { connectIoredis, connectNodeRedis, redisUrl, uniquePrefix } from './redis.ts';

export const CLIENT_KINDS = ['node-redis', 'ioredis'] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

/** Tests move time by hand; nothing sleeps (STYLE). */
export const TEST_START = Date.UTC(2026, 0, 15, 12, 0, 0);

export class ManualClock {
  constructor(public now: number = TEST_START) {}
  advance(ms: number): number {
    this.now += ms;
    return this.now;
  }
  set(ms: number): number {
    this.now = ms;
    return this.now;
  }
  readonly fn = (): number => this.now;
}

export interface TestGate {
  tg: Tollgate;
  clock: ManualClock;
  prefix: string;
  /** Raw commands for assertions on stored state. */
  command(args: string[]): Promise<unknown>;
  close(): Promise<void>;
}

export async function openTollgate(
  kind: ClientKind,
  name: string,
  options: Partial<TollgateOptions> = {},
  url: string = redisUrl(),
): Promise<TestGate> {
  const clock = new ManualClock();
  const prefix = uniquePrefix(name);
  if (kind === 'node-redis') {
    const client = await connectNodeRedis(url);
    return {
      tg: createTollgate({ redis: fromNodeRedis(client), prefix, clock: clock.fn, ...options }),
      clock,
      prefix,
      command: (args) => client.sendCommand(args),
      close: async () => void (await client.close()),
    };
  }
  const client = await connectIoredis(url);
  return {
    tg: createTollgate({ redis: fromIoredis(client), prefix, clock: clock.fn, ...options }),
    clock,
    prefix,
    command: (args) => client.call(args[0]!, ...args.slice(1)),
    close: async () => void (await client.quit()),
  };
}

let sequence = 0;
/** A fresh account id per test. */
export function accountId(label = 'acct'): string {
  sequence += 1;
  return `${label}_${process.pid}_${sequence}`;
}
