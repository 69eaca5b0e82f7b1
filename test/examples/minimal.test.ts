// The files a user copies (examples/express/minimal.ts, examples/koa/minimal.ts), run as a user
// runs them against a real Redis: the key checked and counted by the library's own middleware,
// the rate-limit headers on what passes, 401 without a key, a credit charged on the paid
// route, and 429 with Retry-After once the plan's 5 requests of the minute are spent.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { redisUrl } from '../helpers/redis.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});

/** Starts the file as `npm run example <file>` does and waits for its URL and demo key. */
async function start(file: string): Promise<{ url: string; key: string }> {
  const child = spawn(process.execPath, ['--conditions=tollgate-source', '--import', 'tsx', file], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: redisUrl(), PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const deadline = Date.now() + 20_000;
  for (;;) {
    const started = /listening on (http:\S+)\ntry: curl -i -H "x-api-key: (\S+)"/.exec(output);
    if (started) return { url: started[1]!, key: started[2]! };
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`${file} did not start:\n${output}`);
    await sleep(50);
  }
}

/** The fields the checks read from the servers' JSON bodies. */
type Body = { error: { type: string }; charge: unknown; hello: string };
const bodyOf = async (reply: Response) => (await reply.json()) as Body;

describe.each(['express', 'koa'])('examples/%s/minimal.ts', (framework) => {
  const file = `examples/${framework}/minimal.ts`;

  it("is about 30 lines on the library's middleware, importing tollgate as a user does", () => {
    const source = readFileSync(`${ROOT}${file}`, 'utf8');
    expect(source.trim().split('\n').length).toBeLessThanOrEqual(35);
    expect(source).toContain(`from "tollgate/${framework}"`);
    expect(source).toContain('from "tollgate"');
    expect(source).not.toMatch(/from "\.{1,2}\//);
  });

  it('answers 401 without a key, counts 5 requests a minute with their headers, charges the paid route, then 429', async () => {
    const { url, key } = await start(file);
    const get = (path: string, headers: Record<string, string> = { 'x-api-key': key }) => fetch(`${url}${path}`, { headers });

    const anonymous = await get('/hello', {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('x-ratelimit-limit')).toBeNull();
    expect((await bodyOf(anonymous)).error.type).toBe('unauthorized');

    const paid = await get('/report');
    expect(paid.status).toBe(200);
    expect(paid.headers.get('x-ratelimit-remaining')).toBe('4');
    expect((await bodyOf(paid)).charge).toMatchObject({ ok: true, charged: 1, balance: 9 });

    for (const remaining of [3, 2, 1, 0]) {
      const hello = await get('/hello');
      expect(hello.status).toBe(200);
      expect(hello.headers.get('x-ratelimit-limit')).toBe('5');
      expect(hello.headers.get('x-ratelimit-remaining')).toBe(String(remaining));
      expect(Number(hello.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
      expect((await bodyOf(hello)).hello).toMatch(/^acct_\d+$/);
    }

    const refused = await get('/hello');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await bodyOf(refused)).error.type).toBe('rate_limited');
  });
});
