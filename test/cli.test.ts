// The operator CLI (docs/operations.md): the package's `tollgate` bin, run here from source as a
// child process against the project's Redis (the shared server, or in the cluster project the
// cluster, with --cluster). It needs no plan table; --json puts only JSON on stdout; --help
// prints to stdout and exits 0; the exit codes tell failures apart.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, type Tollgate } from '../src/index.ts';
import { redisUrl, uniquePrefix } from './helpers/redis.ts';
import { accountId, clusterNodes, connectTestClient, type TestClient } from './helpers/tollgate.ts';

const root = join(import.meta.dirname, '..');
// Windows of a day, so that no window resets while the file runs.
const day = (limit: number) => ({ api: [{ limit, windowMs: 86_400_000 }], web: [{ limit, windowMs: 86_400_000 }] });
const PLANS = {
  starter: { limits: day(100), credits: { allowance: 1000, cycle: { months: 1 } }, holds: { cap: 2, maxItems: 100, surfaces: ['api'] } },
  free: { limits: day(30), credits: { allowance: 30, cycle: { days: 30 } }, holds: { cap: 1, maxItems: 100, surfaces: ['web'] } },
};

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The bin from source, with these arguments and environment. */
function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), ...args],
      { cwd: root, env: { ...process.env, REDIS_URL: undefined, ...env } },
      (error, stdout, stderr) => {
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

describe('the tollgate CLI', () => {
  let client: TestClient;
  let tg: Tollgate;
  let subject: string;
  let other: string;
  let lapsed: string;
  let key: string;
  /** The project's Redis, and the flags that reach this file's state. */
  let target: string[];
  const on = (...args: string[]) => cli([...args, ...target]);

  beforeAll(async () => {
    // The project's Redis (server or cluster), and the Redis server's clock, as the CLI uses.
    client = await connectTestClient('ioredis');
    const prefix = uniquePrefix('cli');
    tg = createTollgate({ redis: client.adapter, prefix, plans: PLANS });
    const nodes = clusterNodes();
    target = ['--prefix', prefix, ...(nodes ? ['--redis', `redis://${nodes[0]!.host}:${nodes[0]!.port}`, '--cluster'] : ['--redis', redisUrl()])];
    [subject, other, lapsed] = [accountId('cli'), accountId('cli'), accountId('cli')];
    await tg.accounts.create(subject, { plan: 'starter' });
    await tg.accounts.create(other, { plan: 'free' });
    await tg.accounts.create(lapsed, { plan: 'starter' });
    ({ key } = await tg.keys.issue(subject, { name: 'ci' }));
    await tg.limits.admit(subject, { cost: 2 });
    await tg.credits.charge(subject, { required: 3, operationId: 'op_1' });
    const hold = await tg.holds.open(subject, { items: 2, perItem: { required: 1 } });
    // A lease of 1 ms: this hold has lapsed by the time the CLI sweeps.
    const lapsing = await createTollgate({ redis: client.adapter, prefix, plans: PLANS, leaseMs: 1 }).holds.open(lapsed, {
      items: 4,
      perItem: { required: 1 },
    });
    if (!hold.ok || !lapsing.ok) throw new Error('a hold did not open');
  });
  afterAll(async () => {
    await client?.close();
  });

  it('--help prints the commands on stdout and exits 0, with no Redis needed', async () => {
    const run = await cli(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: tollgate <command>');
    for (const command of [
      'inspect <subject>',
      'usage <subject>',
      'history <subject>',
      'reconcile <subject>',
      'journal <subject>',
      'keys list',
      'keys issue',
      'keys revoke',
      'accounts list',
      'sweep',
    ]) {
      expect(run.stdout).toContain(command);
    }
    expect(run.stderr).toBe('');
  });

  it('exits 2 with a message on stderr for an unknown command, an unknown option, a missing subject or no Redis', async () => {
    const runs = await Promise.all([on('frobnicate'), on('inspect', '--jsn'), on('inspect'), cli(['inspect', subject])]);
    for (const run of runs) {
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^tollgate: /);
    }
    expect(runs[3]!.stderr).toContain('REDIS_URL');
  });

  it('exits 3 for an account that does not exist, and 1 when Redis cannot be reached', async () => {
    const [missing, down] = await Promise.all([on('inspect', 'nobody_here'), cli(['inspect', subject, '--redis', 'redis://127.0.0.1:1'])]);
    expect(missing).toMatchObject({ code: 3, stdout: '' });
    expect(missing.stderr).toContain('nobody_here');
    expect(down.code).toBe(1);
  });

  it('inspect shows the plan, the windows with their counts, the credits, the holds and the keys, never a secret', async () => {
    const json = await on('inspect', subject, '--json');
    expect(json.code).toBe(0);
    const state = JSON.parse(json.stdout);
    expect(state.plan.name).toBe('starter');
    expect(state.windows.api[0]).toMatchObject({ limit: 100, remaining: 98 });
    expect(state.credits).toMatchObject({ allowance: 1000, balance: 995, spent: 3, held: 2 });
    expect(state.holds).toHaveLength(1);
    expect(state.keys).toEqual([expect.objectContaining({ keyId: tg.keys.parse(key)!.keyId, name: 'ci' })]);
    expect(json.stdout).not.toContain(key.slice(-32));
    const text = await on('inspect', subject);
    expect(text.stdout).toContain(`${subject}: plan starter`);
    expect(text.stdout).toContain('window api: 2/100 used per 86400 s');
    expect(text.stdout).toContain('credits: balance 995, spent 3, held 2 of 1000');
  });

  it('usage, history and reconcile read the account without a plan table', async () => {
    const [usage, history, reconcile] = await Promise.all([on('usage', subject, '--json'), on('history', subject, '--json'), on('reconcile', subject)]);
    expect(JSON.parse(usage.stdout)).toMatchObject({ plan: 'starter', rateLimit: { surface: 'api', remaining: 98 }, credits: { balance: 995 } });
    expect(JSON.parse(history.stdout).at(-1)).toMatchObject({ spent: 3, refunded: 0 });
    expect(reconcile.code).toBe(0);
    expect(reconcile.stdout).toContain('matches');
  });

  it('journal prints the credit movements as text, JSON or CSV, from --since on', async () => {
    const [csv, json] = await Promise.all([on('journal', subject, '--format', 'csv'), on('journal', subject, '--json')]);
    const lines = csv.stdout.trim().split('\n');
    expect(lines[0]).toBe('time,kind,amount,cycle,ref,source');
    expect(lines.slice(1).map((line) => line.split(',').slice(1, 3).join(','))).toEqual(['grant,1000', 'charge,3', 'reserve,2']);
    expect(lines.slice(1).map((line) => line.split(',').at(-1))).toEqual(['cycle:1', 'cycle:1', 'cycle:1']);
    const entries = JSON.parse(json.stdout) as Array<{ time: number; kind: string; ref: string }>;
    expect(entries.map((e) => e.kind)).toEqual(['grant', 'charge', 'reserve']);
    expect(entries[1]!.ref).toBe('op_1');
    const later = await on('journal', subject, '--since', new Date(entries[2]!.time + 1).toISOString(), '--json');
    expect(JSON.parse(later.stdout)).toEqual([]);
  });

  it('journal names the source whose credits moved: the cycle, or a grant (docs/grants.md#journal)', async () => {
    await tg.credits.grant(other, { amount: 10, priority: 0, operationId: 'pack_1' });
    await tg.credits.charge(other, { required: 14, operationId: 'op_2' });
    const entries = JSON.parse((await on('journal', other, '--json')).stdout) as Array<{ kind: string; amount: number; source: string; ref: string }>;
    // Priority 0: the grant pays first, the cycle the rest (its allowance journaled at its first movement).
    expect(entries.map((e) => `${e.kind} ${e.amount} ${e.source} ${e.ref}`)).toEqual([
      'grant 10 g1 pack_1',
      'charge 10 g1 op_2',
      'grant 30 cycle:1 ',
      'charge 4 cycle:1 op_2',
    ]);
    const text = (await on('journal', other)).stdout.trim().split('\n');
    expect(text.map((line) => line.split(/\s+/).slice(1).join(' '))).toEqual([
      'grant 10 cycle 1 g1 pack_1',
      'charge 10 cycle 1 g1 op_2',
      'grant 30 cycle 1 cycle:1',
      'charge 4 cycle 1 cycle:1 op_2',
    ]);
  });

  it('keys issue prints a new key once, keys list shows it, keys revoke revokes it (exit 3 the second time)', async () => {
    const issued = await on('keys', 'issue', other, '--name', 'ops', '--json');
    const { key: newKey, keyId } = JSON.parse(issued.stdout);
    expect((await tg.keys.verify(newKey)).valid).toBe(true);
    expect(JSON.parse((await on('keys', 'list', other, '--json')).stdout)).toEqual([expect.objectContaining({ keyId, name: 'ops' })]);
    expect((await on('keys', 'revoke', other, keyId)).code).toBe(0);
    expect((await tg.keys.verify(newKey)).valid).toBe(false);
    expect((await on('keys', 'revoke', other, keyId)).code).toBe(3);
  });

  it('accounts list finds every account under the prefix (a SCAN of each master on a cluster)', async () => {
    const run = await on('accounts', 'list', '--json');
    expect(JSON.parse(run.stdout)).toEqual([subject, other, lapsed].sort());
  });

  it('runs on ioredis too (--client ioredis): inspect, journal and accounts list', async () => {
    const [inspect, journal, accounts] = await Promise.all([
      on('inspect', subject, '--json', '--client', 'ioredis'),
      on('journal', subject, '--json', '--client', 'ioredis'),
      on('accounts', 'list', '--json', '--client', 'ioredis'),
    ]);
    expect(JSON.parse(inspect.stdout).credits).toMatchObject({ balance: 995, held: 2 });
    expect(JSON.parse(journal.stdout).map((e: { kind: string }) => e.kind)).toEqual(['grant', 'charge', 'reserve']);
    expect(JSON.parse(accounts.stdout)).toEqual([subject, other, lapsed].sort());
    expect((await on('inspect', subject, '--client', 'valkey')).code).toBe(2);
  });

  it('sweep ends lapsed holds with their refunds', async () => {
    const run = await on('sweep', '--json');
    expect(JSON.parse(run.stdout)).toMatchObject({ ended: 1 });
    expect((await tg.accounts.inspect(lapsed)).credits).toMatchObject({ balance: 1000, held: 0 });
  });
});
