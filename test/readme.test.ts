// The README's code is the code the tests run: each of its full examples is an example file
// (examples/quickstart.ts, examples/recipes/*.ts) copied word for word, and each file runs
// against the test Redis with `tollgate` resolved to this source tree and says what the README
// says it prints.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { redisUrl } from './helpers/redis.ts';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The first ```ts block after a heading. */
function blockUnder(heading: string): string {
  const at = readme.indexOf(`\n## ${heading}\n`);
  if (at < 0) throw new Error(`README has no "## ${heading}"`);
  const match = /```ts\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!match) throw new Error(`README has no \`\`\`ts block under "## ${heading}"`);
  return match[1]!;
}

/** An example file without its opening comment lines. */
function exampleBody(file: string): string {
  const lines = readFileSync(join(root, 'examples', file), 'utf8').split('\n');
  return `${lines.slice(lines.findIndex((line) => !line.startsWith('//'))).join('\n').trim()}\n`;
}

async function run(file: string): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), '--conditions=tollgate-source', join(root, 'examples', file)], {
    cwd: root,
    env: { ...process.env, REDIS_URL: redisUrl() },
  });
  return stdout;
}

describe.each([
  ['Quick start', 'quickstart.ts'],
  ['Limits for any subject', 'recipes/limits.ts'],
  ['Holds', 'recipes/llm.ts'],
])('README "%s"', (heading, file) => {
  it(`is examples/${file}, word for word`, () => {
    expect(blockUnder(heading)).toBe(exampleBody(file));
  });
});

describe('README examples run as written', () => {
  it('quick start: a key checked with the admit and the pre-check, then a charge of 1 from 1,000', async () => {
    expect(blockUnder('Quick start').trim().split('\n').length).toBeLessThanOrEqual(22);
    expect(await run('quickstart.ts')).toContain('{ ok: true, charged: 1, balance: 999, replayed: false }');
  });

  it('limits: the 6th sign-in attempt of an IP in a minute is refused; a cost of 4 counts 4 in both windows', async () => {
    const lines = (await run('recipes/limits.ts')).trim().split('\n');
    expect(lines.slice(0, 5)).toEqual([1, 2, 3, 4, 5].map((i) => `${i} try the password`));
    expect(lines[5]).toMatch(/^6 429, retry in \d+ s$/);
    expect(lines[6]).toBe('6/10 per 1 s, 296/300 per 60 s');
  });

  it('holds: 4,096 tokens held, 1,234 spent, 2,862 refunded, nothing left held', async () => {
    const out = await run('recipes/llm.ts');
    expect(out).toContain('1234 2862');
    expect(out).toMatch(/balance: 998766,\s+spent: 1234,\s+held: 0/);
  });
});
