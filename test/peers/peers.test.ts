// Peer ranges are what is tested: the lowest and highest major of node-redis and of
// ioredis that package.json's peerDependencies allow each run a smoke suite through their
// adapter, the README quick start (examples/quickstart*.ts) as written, and the refusal of a
// raw client passed without its adapter. The majors come in as npm aliases (redis4, ioredis5)
// beside the newest ones (redis, ioredis). A private redis-server keeps SCRIPT FLUSH here.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, fromIoredis, fromNodeRedis, type RedisScriptClient } from '../../src/index.ts';
import { InvalidInputError } from '../../src/errors.ts';
import { oneLine, quickStartPrints } from '../helpers/quickstart.ts';
import { startRedisServer, type RedisServer } from '../helpers/redisServer.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const require = createRequire(import.meta.url);
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

interface Peer {
  /** The package users install. */
  name: 'redis' | 'ioredis';
  /** The name it is installed under here (an npm alias for an older major). */
  module: string;
  /** The README quick start for this client. */
  example: string;
}

const PEERS: Peer[] = [
  { name: 'redis', module: 'redis4', example: 'quickstart.ts' },
  { name: 'redis', module: 'redis', example: 'quickstart.ts' },
  { name: 'ioredis', module: 'ioredis5', example: 'quickstart-ioredis.ts' },
  { name: 'ioredis', module: 'ioredis', example: 'quickstart-ioredis.ts' },
];

function majorOf(module: string): number {
  const pkg = JSON.parse(readFileSync(require.resolve(`${module}/package.json`), 'utf8'));
  return Number(String(pkg.version).split('.')[0]);
}

/** ">=4 <7" -> [4, 6]: the lowest and highest major the range allows. */
function majorsOf(range: string): [number, number] {
  const match = /^>=(\d+)(?:\.0\.0)? <(\d+)$/.exec(range);
  if (!match) throw new Error(`peer range "${range}" is not of the form ">=LOW <HIGH+1"`);
  return [Number(match[1]), Number(match[2]) - 1];
}

interface Connected {
  adapter: RedisScriptClient;
  raw: unknown;
  command(args: string[]): Promise<unknown>;
  close(): Promise<unknown>;
}

async function connect(peer: Peer, url: string): Promise<Connected> {
  if (peer.name === 'redis') {
    const { createClient } = (await import(peer.module)) as typeof import('redis');
    const client = createClient({ url });
    client.on('error', () => {});
    await client.connect();
    return { adapter: fromNodeRedis(client), raw: client, command: (args) => client.sendCommand(args), close: () => client.quit() };
  }
  const { Redis } = (await import(peer.module)) as typeof import('ioredis');
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  return { adapter: fromIoredis(client), raw: client, command: (args) => client.call(args[0]!, ...args.slice(1)), close: () => client.quit() };
}

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(() => server?.stop());

describe('peer ranges', () => {
  it('name exactly the majors tested here: the lowest and the highest of each client', () => {
    for (const name of ['redis', 'ioredis'] as const) {
      const tested = PEERS.filter((p) => p.name === name).map((p) => majorOf(p.module));
      expect(majorsOf(manifest.peerDependencies[name]), name).toEqual([Math.min(...tested), Math.max(...tested)]);
    }
  });
});

describe.each(PEERS.map((p) => [`${p.name}@${majorOf(p.module)}`, p] as const))('%s', (_label, peer) => {
  let client: Connected;
  beforeAll(async () => {
    client = await connect(peer, server.url);
  });
  afterAll(() => client?.close());

  it('runs a smoke suite through its adapter: account, key checked with the admit, charge, hold, usage, a flushed script cache', async () => {
    const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: client.adapter, prefix: `peer${majorOf(peer.module)}${peer.name}` });
    const subject = `acct_${peer.module}`;
    await tg.accounts.create(subject, { plan: 'starter' });
    const { key } = await tg.keys.issue(subject);
    const check = await tg.keys.verify(key, { credits: 1 });
    expect(check).toMatchObject({
      ok: true,
      valid: true,
      subject,
      admission: {
        ok: true,
        allowed: true,
        rateLimit: { limit: 100, remaining: 99 },
        credits: { sufficient: true, balance: 1000, needed: 1, available: 1000 },
      },
    });
    expect(await tg.credits.charge(subject, { required: 2, operationId: 'op_1' })).toEqual({
      ok: true,
      charged: 2,
      balance: 998,
      available: 998,
      sources: [{ grantId: 'cycle:1', amount: 2 }],
      replayed: false,
    });
    const hold = await tg.holds.open(subject, { items: 3, perItem: { required: 1 } });
    if (!hold.ok) throw new Error(`hold refused: ${hold.reason}`);
    expect((await tg.holds.settle(subject, hold.hold.id, { itemId: 'item_1' })).accepted).toBe(true);
    expect((await tg.holds.finish(subject, hold.hold.id)).ended).toBe(true);
    // A restarted or flushed server: the next call falls back to EVAL once.
    await client.command(['SCRIPT', 'FLUSH']);
    const usage = await tg.usage(subject);
    expect(usage.credits).toMatchObject({ allowance: 1000, balance: 997, spent: 3, held: 0, available: 997, nextExpiry: null });
    expect(usage.rateLimit.remaining).toBe(99);
  });

  it(`refuses the raw client with an InvalidInputError naming ${peer.name === 'redis' ? 'fromNodeRedis' : 'fromIoredis'}`, () => {
    const adapter = peer.name === 'redis' ? 'fromNodeRedis' : 'fromIoredis';
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: client.raw as RedisScriptClient })).toThrowError(InvalidInputError);
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: client.raw as RedisScriptClient })).toThrowError(
      new RegExp(`wrap it with ${adapter}\\(client\\)`),
    );
  });

  it(`runs the README quick start (examples/${peer.example}) as written`, async () => {
    const dir = join(root, 'node_modules', '.cache', 'tollgate-peers');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${peer.module}-${peer.example.replace(/\.ts$/, '.mts')}`);
    const source = readFileSync(join(root, 'examples', peer.example), 'utf8');
    // The same code, with `tollgate` this source tree and the client the major under test.
    writeFileSync(
      file,
      source.replace('from "tollgate"', `from ${JSON.stringify(join(root, 'src', 'index.ts'))}`).replace(`from "${peer.name}"`, `from "${peer.module}"`),
    );
    const { stdout } = await run(process.execPath, [join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), file], {
      env: { ...process.env, REDIS_URL: server.url },
    });
    expect(oneLine(stdout)).toBe(quickStartPrints(peer.example));
  });
});
