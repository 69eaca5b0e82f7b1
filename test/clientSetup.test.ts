// A client setup cannot crash the host (docs/reliability.md "Client setup"): a Redis client
// emits 'error' when its connection fails, and an 'error' nobody listens to ends the process.
// fromNodeRedis and fromIoredis warn once per process when the client they adapt has no
// listener; the client lines of the README, of docs/ and of the examples all add one.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

/** Runs a module in a fresh Node process (tollgate from this source tree) and returns the warning codes it emitted. */
async function warningsOf(code: string): Promise<string[]> {
  const script = `import { createClient } from 'redis'; import { Redis } from 'ioredis'; import { fromNodeRedis, fromIoredis } from './src/index.ts';
    const codes = []; process.on('warning', (w) => codes.push(w.code ?? w.name));
    ${code}
    setImmediate(() => console.log(JSON.stringify(codes)));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root });
  return JSON.parse(stdout);
}

describe('the Redis client setup', () => {
  it('fromNodeRedis warns once per process (TOLLGATE_NO_ERROR_LISTENER) when the client has no error listener, not when it has one', async () => {
    expect(await warningsOf(`fromNodeRedis(createClient().on('error', () => {}));`)).toEqual([]);
    expect(await warningsOf(`fromNodeRedis(createClient()); fromNodeRedis(createClient()); fromIoredis(new Redis({ lazyConnect: true }));`)).toEqual([
      'TOLLGATE_NO_ERROR_LISTENER',
    ]);
  });

  it('fromIoredis warns the same way', async () => {
    expect(await warningsOf(`fromIoredis(new Redis({ lazyConnect: true }).on('error', () => {}));`)).toEqual([]);
    expect(await warningsOf(`fromIoredis(new Redis({ lazyConnect: true }));`)).toEqual(['TOLLGATE_NO_ERROR_LISTENER']);
  });

  it("every client line of the README, of docs/ and of the examples a user copies adds an 'error' listener", () => {
    const files = [
      'README.md',
      'docs/limits.md',
      'docs/production.md',
      'docs/reliability.md',
      'examples/quickstart.ts',
      'examples/quickstart-ioredis.ts',
      'examples/recipes/limits.ts',
      'examples/recipes/llm.ts',
    ];
    for (const file of files) {
      const lines = readFileSync(join(root, file), 'utf8')
        .split('\n')
        .filter((line) => /(createClient|new Redis)\(/.test(line) && !line.trimStart().startsWith('import'));
      expect(lines.length, file).toBeGreaterThan(0);
      for (const line of lines) expect(line, file).toMatch(/\.on\("error", /);
    }
  });
});
