// The script loader and registry (STYLE "Lua scripts"): includes resolved once and in order,
// cycles and missing files reported with file and line, headers that declare every key and
// argument, codes that agree with TypeScript, a fresh bundle with correct SHA1s, and the
// EVAL fallback after the server forgets its scripts.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code } from '../src/scripts/codes.ts';
import { GENERATED, LUA_ROOT, readLuaFile, renderBundle } from '../src/scripts/bundle.ts';
import { SCRIPTS } from '../src/scripts/bundle.generated.ts';
import { LuaIncludeError, parseHeader, resolveIncludes } from '../src/scripts/loader.ts';
import { CLIENT_KINDS, accountId, openTollgate, type TestGate } from './helpers/tollgate.ts';

const files = (tree: Record<string, string>) => (path: string) => tree[path];

describe('Lua include resolution', () => {
  it('includes each helper once, before the code that uses it', () => {
    const out = resolveIncludes('main.lua', files({
      'main.lua': '--@include "lib/a.lua"\n--@include "lib/b.lua"\nlocal x = a() + b()',
      'lib/a.lua': 'local function a() return 1 end',
      'lib/b.lua': '--@include "a.lua"\nlocal function b() return a() end',
    }));
    expect(out.match(/local function a/g)).toHaveLength(1);
    expect(out.indexOf('function a')).toBeLessThan(out.indexOf('function b'));
    expect(out.indexOf('function b')).toBeLessThan(out.indexOf('local x'));
  });

  it('reports a missing include with the file and line that asked for it', () => {
    const read = files({ 'main.lua': 'local y = 1\n--@include "lib/nope.lua"' });
    expect(() => resolveIncludes('main.lua', read)).toThrowError(new LuaIncludeError('main.lua:2: include not found: lib/nope.lua'));
  });

  it('reports an include cycle with every file and line on the loop', () => {
    const read = files({
      'main.lua': '--@include "lib/a.lua"',
      'lib/a.lua': '\n--@include "b.lua"',
      'lib/b.lua': '--@include "a.lua"',
    });
    expect(() => resolveIncludes('main.lua', read)).toThrowError('include cycle: lib/a.lua:2 -> lib/b.lua:1 -> lib/a.lua');
  });

  it('reports a file that includes itself', () => {
    expect(() => resolveIncludes('main.lua', files({ 'main.lua': '--@include "main.lua"' }))).toThrowError('include cycle: main.lua:1 -> main.lua');
  });
});

describe('script headers', () => {
  const scripts = readdirSync(LUA_ROOT).filter((f) => f.endsWith('.lua'));

  it.each(scripts)('%s declares every KEYS and ARGV it uses, and uses every one it declares', (file) => {
    const source = readFileSync(join(LUA_ROOT, file), 'utf8');
    const header = parseHeader(source, file);
    const body = source.slice(source.indexOf(']]') + 2);
    const used = (kind: string) => [...new Set([...body.matchAll(new RegExp(`${kind}\\[(\\d+)\\]`, 'g'))].map((m) => Number(m[1])))].sort((a, b) => a - b);
    expect(used('KEYS')).toEqual(header.keys.map((k) => k.index));
    expect(used('ARGV')).toEqual(header.args.map((a) => a.index));
    expect(header.name).toBe(file.replace(/\.lua$/, ''));
  });

  it.each(scripts)('%s names each KEYS/ARGV once in a local and uses only the names', (file) => {
    const source = readFileSync(join(LUA_ROOT, file), 'utf8');
    const body = source.slice(source.indexOf(']]') + 2);
    for (const m of body.matchAll(/(KEYS|ARGV)\[\d+\]/g)) {
      const line = body.slice(body.lastIndexOf('\n', m.index) + 1, body.indexOf('\n', m.index));
      expect(line, `${file}: ${line}`).toMatch(/^local \w+\s+= (tonumber\()?(KEYS|ARGV)\[\d+\]\)?$/);
    }
  });

  it('every script returns codes from lua/lib/codes.lua only, which match the TypeScript enum', () => {
    const lua = readFileSync(join(LUA_ROOT, 'lib', 'codes.lua'), 'utf8');
    const fromLua = Object.fromEntries([...lua.matchAll(/^\s+([A-Z_]+) = (\d+),$/gm)].map((m) => [m[1], Number(m[2])]));
    const fromTs = Object.fromEntries(Object.entries(Code).filter(([, v]) => typeof v === 'number'));
    expect(fromLua).toEqual(fromTs);
  });
});

describe('script bundle', () => {
  it('is up to date with lua/ (run `npm run build:lua` after editing a script)', () => {
    expect(readFileSync(GENERATED, 'utf8')).toBe(renderBundle());
  });

  it('carries the SHA1 of each resolved source', () => {
    for (const [name, script] of Object.entries(SCRIPTS)) {
      expect(createHash('sha1').update(script.source).digest('hex'), name).toBe(script.sha1);
      expect(script.source, name).toBe(resolveIncludes(`${name}.lua`, readLuaFile(LUA_ROOT)));
    }
  });
});

describe.each(CLIENT_KINDS)('script runner through %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'scripts');
  });
  afterAll(() => gate.close());

  it('falls back to EVAL once when the server has no cached script (NOSCRIPT), then uses EVALSHA', async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'pro' });
    await gate.command(['SCRIPT', 'FLUSH']);
    expect(await gate.command(['SCRIPT', 'EXISTS', SCRIPTS.charge.sha1])).toEqual([0]);
    const charged = await gate.tg.credits.charge(id, { required: 1 });
    expect(charged).toMatchObject({ ok: true, charged: 1, balance: 4999 });
    expect(await gate.command(['SCRIPT', 'EXISTS', SCRIPTS.charge.sha1])).toEqual([1]);
  });
});
