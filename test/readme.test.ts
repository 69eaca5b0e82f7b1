// The README's example works as written (issue "Core library": done when the 20-line
// example runs), against the test Redis, with `tollgate` resolved to this source tree.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { redisUrl } from './helpers/redis.ts';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

function exampleBlock(): string {
  const section = readme.slice(readme.indexOf('## Example'));
  const match = /```ts\n([\s\S]*?)```/.exec(section);
  if (!match) throw new Error('README has no ```ts block under "## Example"');
  return match[1]!;
}

describe('README example', () => {
  it('is about 20 lines', () => {
    expect(exampleBlock().trim().split('\n').length).toBeLessThanOrEqual(22);
  });

  it('runs as written: a 200 with rate-limit headers, then a 500-credit job canceled for a 500 refund', async () => {
    const dir = join(root, 'node_modules', '.cache', 'tollgate-readme');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'example.mts');
    writeFileSync(file, exampleBlock().replace('from "tollgate"', `from ${JSON.stringify(join(root, 'src', 'index.ts'))}`));
    const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), file], {
      env: { ...process.env, REDIS_URL: redisUrl() },
    });
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^200 \{/);
    expect(stdout).toContain("'X-RateLimit-Limit': '100'");
    expect(stdout).toContain("'X-RateLimit-Remaining': '99'");
    expect(lines.at(-1)).toBe('500');
  });
});
