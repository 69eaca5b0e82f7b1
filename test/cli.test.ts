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
  let funded: string;
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
    [subject, other, lapsed, funded] = [accountId('cli'), accountId('cli'), accountId('cli'), accountId('cli')];
    await tg.accounts.create(subject, { plan: 'starter' });
    await tg.accounts.create(other, { plan: 'free' });
    await tg.accounts.create(lapsed, { plan: 'starter' });
    await tg.accounts.create(funded, { plan: 'free' });
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
      'grants list <subject>',
      'grant <subject>',
      'void <subject> <grantId>',
      'adjust <subject>',
      'refund <subject> <charge>',
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

  it('accounts list finds every account under the prefix (accounts.list: a SCAN of each master on a cluster)', async () => {
    const run = await on('accounts', 'list', '--json');
    expect(JSON.parse(run.stdout)).toEqual([subject, other, lapsed, funded].sort());
  });

  it('runs on ioredis too (--client ioredis): inspect, journal and accounts list', async () => {
    const [inspect, journal, accounts] = await Promise.all([
      on('inspect', subject, '--json', '--client', 'ioredis'),
      on('journal', subject, '--json', '--client', 'ioredis'),
      on('accounts', 'list', '--json', '--client', 'ioredis'),
    ]);
    expect(JSON.parse(inspect.stdout).credits).toMatchObject({ balance: 995, held: 2 });
    expect(JSON.parse(journal.stdout).map((e: { kind: string }) => e.kind)).toEqual(['grant', 'charge', 'reserve']);
    expect(JSON.parse(accounts.stdout)).toEqual([subject, other, lapsed, funded].sort());
    expect((await on('inspect', subject, '--client', 'valkey')).code).toBe(2);
  });

  describe('credits beyond the allowance: grant, grants list, void, adjust, refund', () => {
    const day = 86_400_000;

    it('grant adds a grant once per operation id; grants list shows the sources in spend order', async () => {
      const expiresAt = new Date(Date.now() + 7 * day).toISOString();
      const args = [
        'grant',
        funded,
        '--amount',
        '100',
        '--kind',
        'promotional',
        '--expires-at',
        expiresAt,
        '--reason',
        'Spring promo',
        '--operation-id',
        'promo_1',
      ];
      const first = await on(...args, '--json');
      expect(first.code).toBe(0);
      expect(JSON.parse(first.stdout)).toMatchObject({
        ok: true,
        grantId: 'g1',
        replayed: false,
        operationId: 'promo_1',
        grant: { kind: 'promotional', status: 'active', amount: 100, expiresAt: Date.parse(expiresAt), reason: 'Spring promo' },
      });
      const again = await on(...args);
      expect(again.stdout).toMatch(/^already granted g1 to /);
      // Without --operation-id a new id is made and printed, to run the command again with.
      const paid = await on('grant', funded, '--amount', '500');
      expect(paid.code).toBe(0);
      const madeId = /--operation-id (cli_[0-9a-f]+)/.exec(paid.stdout)![1]!;
      expect((await on('grant', funded, '--amount', '500', '--operation-id', madeId, '--json')).stdout).toContain('"replayed": true');

      const list = JSON.parse((await on('grants', 'list', funded, '--json')).stdout) as Array<{ grantId: string }>;
      // The free cycle ends in 30 days, after the promotion; the paid grant never expires.
      expect(list.map((g) => g.grantId)).toEqual(['g1', 'cycle:1', 'g2']);
      const text = (await on('grants', 'list', funded)).stdout.trim().split('\n');
      expect(text[0]).toMatch(/^1\. g1 {2}promotional {2}active {2}100 left of 100 .* {2}"Spring promo"$/);
      expect(text[2]).toMatch(/^3\. g2 {2}paid {2}active {2}500 left of 500 .*expires never$/);
      expect((await tg.usage(funded)).credits.available).toBe(630);
    });

    it('refund returns a charge named by its operation id to the source that paid it; exit 3 for an unknown charge, 5 for more than is left', async () => {
      const charged = await tg.credits.charge(funded, { required: 4, operationId: 'req_cli_1' });
      expect(charged).toMatchObject({ ok: true, sources: [{ grantId: 'g1', amount: 4 }] });
      const part = await on('refund', funded, 'req_cli_1', '--amount', '1', '--reason', 'Failed export', '--json');
      expect(JSON.parse(part.stdout)).toMatchObject({ ok: true, refunded: 1, sources: [{ grantId: 'g1', amount: 1 }], replayed: false });
      const rest = await on('refund', funded, 'req_cli_1');
      expect(rest.stdout).toMatch(/^refunded 3 of req_cli_1 to g1 3 /);
      const more = await on('refund', funded, 'req_cli_1');
      expect(more.code).toBe(5);
      const unknown = await on('refund', funded, 'req_never_charged');
      expect(unknown.code).toBe(3);
      expect(unknown.stdout).toContain('operationTtlMs');
      // The journal names the source of each movement.
      const journal = JSON.parse((await on('journal', funded, '--json')).stdout) as Array<{ kind: string; amount: number; source: string }>;
      expect(journal.filter((e) => e.source === 'g1').map((e) => [e.kind, e.amount])).toEqual([
        ['grant', 100],
        ['charge', 4],
        ['refund_charge', 1],
        ['refund_charge', 3],
      ]);
    });

    it('adjust --amount=+n adds an adjustment grant, --amount=-n takes credits in spend order; exit 5 when too few are available', async () => {
      const plus = JSON.parse((await on('adjust', funded, '--amount=+20', '--reason', 'Goodwill', '--json')).stdout);
      expect(plus).toMatchObject({ ok: true, amount: 20, grantId: 'g3', sources: [{ grantId: 'g3', amount: 20 }], available: 650 });
      const minus = JSON.parse((await on('adjust', funded, '--amount=-110', '--reason', 'Duplicate promo', '--json')).stdout);
      expect(minus).toMatchObject({
        amount: -110,
        grantId: null,
        sources: [
          { grantId: 'g1', amount: 100 },
          { grantId: 'cycle:1', amount: 10 },
        ],
        available: 540,
      });
      const tooMuch = await on('adjust', funded, '--amount=-541', '--reason', 'Too much');
      expect(tooMuch.code).toBe(5);
      expect(tooMuch.stdout).toContain('540 credits available, 541 needed');
      expect((await on('adjust', funded, '--amount=-1')).code).toBe(2);
    });

    it('void voids what is left of a grant once; exit 3 for a grant the subject does not have, 2 for a cycle', async () => {
      const voided = await on('void', funded, 'g2', '--reason', 'Chargeback', '--operation-id', 'cb_1', '--json');
      expect(JSON.parse(voided.stdout)).toMatchObject({ ok: true, voided: 500, replayed: false, grantId: 'g2' });
      expect(JSON.parse((await on('void', funded, 'g2', '--reason', 'Chargeback', '--operation-id', 'cb_1', '--json')).stdout)).toMatchObject({
        voided: 500,
        replayed: true,
      });
      const [missing, cycle] = await Promise.all([on('void', funded, 'g99'), on('void', funded, 'cycle:1')]);
      expect(missing.code).toBe(3);
      expect(missing.stderr).toContain('g99');
      expect(cycle.code).toBe(2);
      const ended = JSON.parse((await on('grants', 'list', funded, '--ended', '--json')).stdout) as Array<{ grantId: string; status: string }>;
      expect(ended.find((g) => g.grantId === 'g2')).toMatchObject({ status: 'voided' });
      expect((await tg.usage(funded)).credits.available).toBe(40);
    });

    it('exit 2 for a bad command line: no --amount, an amount that is no number, a bad instant, a grant id missing', async () => {
      const runs = await Promise.all([
        on('grant', funded),
        on('grant', funded, '--amount', 'lots'),
        on('grant', funded, '--amount', '5', '--expires-at', 'soon'),
        on('grant', funded, '--amount', '5', '--kind', 'gift'),
        on('void', funded),
        on('refund', funded),
        on('grants', funded),
      ]);
      for (const run of runs) {
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(/^tollgate: /);
      }
    });
  });

  it('sweep ends lapsed holds with their refunds', async () => {
    const run = await on('sweep', '--json');
    expect(JSON.parse(run.stdout)).toMatchObject({ ended: 1 });
    expect((await tg.accounts.inspect(lapsed)).credits).toMatchObject({ balance: 1000, held: 0 });
  });
});
