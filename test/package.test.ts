// The published package (SPEC §1): ESM and CommonJS builds with declarations, the Lua inside
// the build (nothing read from disk at run time), and the manifest a host's tooling reads.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisUrl } from './helpers/redis.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

describe('package manifest', () => {
  it('is named tollgate, side-effect free, for Node >= 22, shipping only dist, README and CHANGELOG', () => {
    expect(manifest).toMatchObject({ name: 'tollgate', sideEffects: false, engines: { node: '>=22' }, files: ['dist', 'README.md', 'CHANGELOG.md'] });
  });

  it('maps import and require to the ESM and CommonJS builds, with types for each', () => {
    expect(manifest.exports['.']).toEqual({
      import: { types: './dist/index.d.ts', default: './dist/index.js' },
      require: { types: './dist/index.d.cts', default: './dist/index.cjs' },
    });
    expect(manifest.exports['./model'].import.default).toBe('./dist/model/index.js');
  });

  it('takes node-redis, ioredis and @opentelemetry/api as optional peers, no dependencies', () => {
    expect(Object.keys(manifest.peerDependencies).sort()).toEqual(['@opentelemetry/api', 'ioredis', 'redis']);
    for (const peer of Object.keys(manifest.peerDependencies)) expect(manifest.peerDependenciesMeta[peer]).toEqual({ optional: true });
    expect(manifest.dependencies ?? {}).toEqual({});
  });
});

describe('built package', () => {
  // The build is copied away from the repository so that no lua/ folder is in reach.
  let dir: string;
  beforeAll(async () => {
    await run(process.execPath, [join(root, 'node_modules', 'tsup', 'dist', 'cli-default.js')], { cwd: root });
    dir = mkdtempSync(join(tmpdir(), 'tollgate-pkg-'));
    cpSync(join(root, 'dist'), join(dir, 'node_modules', 'tollgate', 'dist'), { recursive: true });
    cpSync(join(root, 'package.json'), join(dir, 'node_modules', 'tollgate', 'package.json'));
    for (const dep of ['redis', '@redis', 'ioredis']) {
      if (existsSync(join(root, 'node_modules', dep))) cpSync(join(root, 'node_modules', dep), join(dir, 'node_modules', dep), { recursive: true, dereference: true });
    }
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const script = (load: string) => `
${load}
const client = createClient({ url: process.env.URL });
await client.connect();
const tg = t.createTollgate({ redis: t.fromNodeRedis(client), prefix: 'pkg' + process.pid });
const id = 'pkg_' + Date.now();
await tg.accounts.create(id, { plan: 'free' });
const c = await tg.credits.charge(id, { required: 2 });
console.log(JSON.stringify(c));
await client.close();`;

  it('works through import (ESM) with the scripts inside the build', async () => {
    const code = script(`import * as t from 'tollgate'; import { createClient } from 'redis';`);
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], { cwd: dir, env: { ...process.env, URL: redisUrl() } });
    expect(JSON.parse(stdout)).toEqual({ ok: true, charged: 2, balance: 28, replayed: false });
  });

  it('works through require (CommonJS)', async () => {
    const code = `(async () => { const t = require('tollgate'); const { createClient } = require('redis'); ${script('')} })().catch((e) => { console.error(e); process.exit(1); });`;
    const { stdout } = await run(process.execPath, ['-e', code], { cwd: dir, env: { ...process.env, URL: redisUrl() } });
    expect(JSON.parse(stdout)).toEqual({ ok: true, charged: 2, balance: 28, replayed: false });
  });

  it('exports the reference model as tollgate/model', async () => {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', `import { TollgateModel, checkInvariants } from 'tollgate/model'; console.log(typeof TollgateModel, typeof checkInvariants);`], { cwd: dir });
    expect(stdout.trim()).toBe('function function');
  });
});
