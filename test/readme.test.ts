// The README's code, and the same recipes on the docs/ pages, are the code the tests
// run: each full example is an example file (examples/quickstart.ts, examples/recipes/*.ts)
// copied word for word, and each file runs against the test Redis with `tollgate` resolved to
// this source tree and says what the page says it prints.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { oneLine, quickStartPrints } from './helpers/quickstart.ts';
import { redisUrl } from './helpers/redis.ts';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The first ```ts (or ```sh) block after a `## heading` of a page (README.md, or docs/<page>.md). */
function blockUnder(page: string, heading: string, language = 'ts'): string {
  const text = readFileSync(join(root, page), 'utf8');
  const at = text.indexOf(`\n## ${heading}\n`);
  if (at < 0) throw new Error(`${page} has no "## ${heading}"`);
  const end = text.indexOf('\n## ', at + 1);
  const section = text.slice(at, end < 0 ? undefined : end);
  const match = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(section);
  if (!match) throw new Error(`${page} has no \`\`\`${language} block under "## ${heading}"`);
  return match[1]!;
}

/** The lines of `block` that are not lines of the example, in the example's order (none: it shows the example's own lines). */
function linesNotIn(block: string, file: string): string[] {
  const lines = exampleBody(file).split('\n');
  let at = 0;
  return block
    .split('\n')
    .filter((line) => line.trim() !== '')
    .filter((line) => {
      const found = lines.indexOf(line, at);
      if (found < 0) return true;
      at = found + 1;
      return false;
    });
}

/** An example file without its opening comment lines. */
function exampleBody(file: string): string {
  const lines = readFileSync(join(root, 'examples', file), 'utf8').split('\n');
  return `${lines
    .slice(lines.findIndex((line) => !line.startsWith('//')))
    .join('\n')
    .trim()}\n`;
}

async function run(file: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), '--conditions=tollgate-source', join(root, 'examples', file)],
    {
      cwd: root,
      env: { ...process.env, REDIS_URL: redisUrl() },
    },
  );
  return stdout;
}

describe.each([
  ['README.md', 'Quick start', 'quickstart.ts'],
  ['README.md', 'Limits for any subject', 'recipes/limits.ts'],
  ['README.md', 'Token buckets', 'recipes/bucket.ts'],
  ['README.md', 'Overrides', 'recipes/override.ts'],
  ['README.md', 'Per-key limits', 'recipes/keyLimits.ts'],
  ['README.md', 'Concurrency limits', 'recipes/inFlight.ts'],
  ['README.md', 'Plan edits', 'recipes/planEdit.ts'],
  ['README.md', 'Holds', 'recipes/llm.ts'],
  ['README.md', 'Grants and top-ups', 'recipes/grants.ts'],
  ['README.md', 'Events', 'recipes/events.ts'],
  ['README.md', 'In memory', 'recipes/memory.ts'],
  ['docs/limits.md', 'Limits for any subject', 'recipes/limits.ts'],
  ['docs/limits.md', 'Token buckets', 'recipes/bucket.ts'],
  ['docs/limits.md', 'Overrides', 'recipes/override.ts'],
  ['docs/limits.md', 'Per-key limits', 'recipes/keyLimits.ts'],
  ['docs/limits.md', 'Concurrency limits', 'recipes/inFlight.ts'],
  ['docs/limits.md', 'Plan edits', 'recipes/planEdit.ts'],
  ['docs/memory.md', 'What it is for', 'recipes/memory.ts'],
])('%s "%s"', (page, heading, file) => {
  it(`is examples/${file}, word for word`, () => {
    expect(blockUnder(page, heading)).toBe(exampleBody(file));
  });
});

// The adapters' and failure modes' sections show an example's core lines, word for word and in
// order; the example around them runs.
describe.each([
  ['README.md', 'Fastify', 'recipes/fastify.ts'],
  ['README.md', 'Hono', 'recipes/hono.ts'],
  ['README.md', 'When Redis is down', 'recipes/storeError.ts'],
  ['docs/http.md', 'Fastify', 'recipes/fastify.ts'],
  ['docs/http.md', 'Hono', 'recipes/hono.ts'],
  ['docs/reliability.md', 'When Redis is down', 'recipes/storeError.ts'],
])('%s "%s"', (page, heading, file) => {
  it(`shows lines of examples/${file}, word for word`, () => {
    expect(linesNotIn(blockUnder(page, heading), file)).toEqual([]);
  });
});

describe('README', () => {
  it('links only files the repository holds, and docs/ anchors that exist', () => {
    const broken: string[] = [];
    for (const [, target, anchor] of readme.matchAll(/\]\(((?:docs\/)?[A-Za-z-]+\.md)(?:#([a-z0-9-]+))?\)/g)) {
      const path = join(root, target!);
      if (!existsSync(path)) broken.push(target!);
      else if (anchor && ![...readFileSync(path, 'utf8').matchAll(/^#+\s+(.+)$/gm)].some((h) => slug(h[1]!) === anchor)) broken.push(`${target}#${anchor}`);
    }
    expect(readme).toContain('](docs/limits.md)');
    expect(readme).toContain('](docs/production.md)');
    expect(broken).toEqual([]);
  });

  it('gives the command that starts the example server and the one that runs the tests', () => {
    const commands = blockUnder('README.md', 'Working on tollgate', 'sh');
    expect(commands).toMatch(/^npm start\s/m);
    expect(commands).toMatch(/^npm test\s/m);
  });
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');
}

describe('README and docs/ examples run as written', () => {
  it('quick start: a key checked with the admit and the pre-check, then a charge of 1 from 1,000', async () => {
    expect(blockUnder('README.md', 'Quick start').trim().split('\n').length).toBeLessThanOrEqual(22);
    expect(quickStartPrints()).toContain("available: 999, sources: [ { grantId: 'cycle:1', amount: 1 } ]");
    expect(oneLine(await run('quickstart.ts'))).toBe(quickStartPrints());
  });

  it('limits: the 6th sign-in attempt of an IP in a minute is refused; a cost of 4 counts 4 in both windows', async () => {
    const lines = (await run('recipes/limits.ts')).trim().split('\n');
    expect(lines.slice(0, 5)).toEqual([1, 2, 3, 4, 5].map((i) => `${i} try the password`));
    expect(lines[5]).toMatch(/^6 429, retry in \d+ s$/);
    expect(lines[6]).toBe('6/10 per 1 s, 296/300 per 60 s');
  });

  it('fastify and hono: a key checked, the request counted and a credit looked for: 200 with 99 requests left', async () => {
    const [fastify, hono] = await Promise.all([run('recipes/fastify.ts'), run('recipes/hono.ts')]);
    expect(fastify.trim()).toBe('200 99');
    expect(hono.trim()).toBe('200 99');
  });

  it('when Redis is down: the free endpoint decides on a quarter of the plan (25 of 100), the charged one answers 503', async () => {
    expect((await run('recipes/storeError.ts')).trim().split('\n')).toEqual(["200 25 { degraded: 'local' }", '503']);
  });

  it('the operator CLI commands run as written, on REDIS_URL', async () => {
    const setup = `import { createClient } from 'redis'; import { createTollgate, fromNodeRedis } from './src/index.ts'; import { EXAMPLE_PLANS } from './examples/shared/plans.ts';
      const client = await createClient({ url: process.env.REDIS_URL }).on('error', () => {}).connect();
      const tollgate = createTollgate({ plans: EXAMPLE_PLANS, redis: fromNodeRedis(client) });
      await tollgate.accounts.create('acct_42', { plan: 'starter' }).catch(() => {});
      await tollgate.credits.charge('acct_42', { required: 2 });
      await client.quit();`;
    await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', setup], {
      cwd: root,
      env: { ...process.env, REDIS_URL: redisUrl() },
    });
    const commands = blockUnder('README.md', 'Operator CLI', 'sh');
    expect(blockUnder('docs/operations.md', 'Operator CLI', 'sh')).toBe(commands);
    const outputs: string[] = [];
    for (const line of commands.trim().split('\n')) {
      const [npx, bin, ...args] = line.split(/\s+/);
      expect([npx, bin]).toEqual(['npx', 'tollgate']);
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), ...args], {
        cwd: root,
        env: { ...process.env, REDIS_URL: redisUrl() },
      });
      outputs.push(stdout);
    }
    const [inspect, journal, issued, accounts] = outputs;
    expect(inspect).toContain('acct_42: plan starter');
    expect(journal).toMatch(/^time,kind,amount,cycle,ref,source\n.*,grant,1000,1,,cycle:1\n/);
    expect(JSON.parse(issued!).key).toMatch(/^tgk_acct_42_/);
    expect(accounts!.split('\n')).toContain('acct_42');
  });

  it('in memory: two requests a minute, the third refused, room again a minute later, a charge of 3 from 10', async () => {
    const lines = (await run('recipes/memory.ts')).trim().split('\n');
    expect(lines.slice(0, 4)).toEqual(['1 200', '2 200', '3 429', 'true']);
    expect(lines.slice(4).join(' ')).toMatch(
      /^\{\s+ok: true,\s+charged: 3,\s+balance: 7,\s+available: 7,\s+sources: \[ \{ grantId: 'cycle:1', amount: 3 \} \],\s+replayed: false \}$/,
    );
  });

  it('token buckets: a burst of 5 at once, the 6th denied, a token back after 500 ms', async () => {
    expect((await run('recipes/bucket.ts')).trim().split('\n')).toEqual(['true true true true true false', 'true 0']);
  });

  it("overrides: a raise to 300 a minute for one customer, the plan's 30 back the next day", async () => {
    expect((await run('recipes/override.ts')).trim().split('\n')).toEqual(['300', '30']);
  });

  it("per-key limits: the CI key's third request in a minute is refused", async () => {
    expect((await run('recipes/keyLimits.ts')).trim().split('\n')).toEqual(['1 200', '2 200', '3 429']);
  });

  it('concurrency limits: 5 completions in flight, the 6th refused, room again once one is released', async () => {
    expect((await run('recipes/inFlight.ts')).trim().split('\n')).toEqual(['6 concurrency', 'true']);
  });

  it('plan edits: a limit raised from 5 to 500 reaches the account at its next admit, its count kept', async () => {
    expect((await run('recipes/planEdit.ts')).trim()).toBe('500 498');
  });

  it('grants: the promotion that expires first pays the charge; the refund goes back to it; 11,500 available', async () => {
    const lines = (await run('recipes/grants.ts')).trim();
    expect(lines).toMatch(/^\[ \{ grantId: 'g2', amount: 20 \} \]\n/);
    expect(lines).toMatch(/\{\s+ok: true,\s+refunded: 20,\s+sources: \[ \{ grantId: 'g2', amount: 20 \} \],\s+replayed: false\s+\}/);
    expect(lines.split('\n').at(-1)).toBe('11500');
  });

  it('events: one email at 80% used, one top-up of 500 when 90 are left, and 590 available once both groups are done', async () => {
    const lines = (await run('recipes/events.ts')).trim().split('\n');
    // The two groups run side by side: their lines come in either order, the balance last.
    expect(lines.slice(0, 2).sort()).toEqual(['email to acct_9: 80% of your credits are used, 150 left', 'top-up g1 false']);
    expect(lines.slice(2)).toEqual(['590']);
  });

  it('holds: 4,096 tokens held, 1,234 spent, 2,862 refunded, nothing left held', async () => {
    const out = await run('recipes/llm.ts');
    expect(out).toContain('1234 2862');
    expect(out).toMatch(/balance: 998766,\s+spent: 1234,\s+held: 0/);
  });
});
