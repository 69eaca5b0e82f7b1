// The Lua build and the one call path: includes resolved once and in
// order, cycles and missing files reported with file and line; the compile step (constant
// tables to literals, unused helpers and comments dropped, strings untouched); headers that
// declare every KEYS and ARGV; codes that agree with TypeScript; a fresh bundle with correct
// SHA1s and command builders that follow the headers; the function library (every script's
// own code, the helpers once); FCALL with the library loaded where it is missing, EVALSHA
// where functions are refused, and the EVAL fallback after NOSCRIPT.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, type Tollgate } from '../src/index.ts';
import { AccountNotFoundError, StoreUnavailableError } from '../src/errors.ts';
import { SubjectKeys } from '../src/redisKeys.ts';
import { LUA_ROOT, SCRIPTS_DIR, buildNames, renderGenerated, shippedSource } from '../src/scripts/bundle.ts';
import { LIBRARY, admitPolicy, charge, creditHistory, listHolds, openHold, readHold, reconcile, refund, verifyKey } from '../src/scripts/bundle.generated.ts';
import { ReplyShapeError } from '../src/scripts/reply.ts';
import { ReplyGrammarError, parseReturns } from '../src/scripts/replyGrammar.ts';
import { Code } from '../src/scripts/codes.ts';
import { LuaCompileError, compileLua, tokenize } from '../src/scripts/compile.ts';
import { LUA_GLOBALS, LUA_KEYWORDS } from '../src/scripts/minify.ts';
import { LuaIncludeError, parseHeader, resolveIncludes } from '../src/scripts/loader.ts';
import { FUNCTION_CLOSE, NOW_ARG, SETTINGS, SUBJECT_KEYS, functionLibrary, functionOpen, type Settings, type SubjectKeyNames } from '../src/scripts/script.ts';
import { SCRIPTS, recording, type Recorder } from './helpers/recording.ts';
import { connectNodeRedis } from './helpers/redis.ts';
import { rawCommand, startRedisServer, type RedisServer } from './helpers/redisServer.ts';
import { CLIENT_KINDS, ManualClock, accountId, connectTestClient, type TestClient } from './helpers/tollgate.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';

const files = (tree: Record<string, string>) => (path: string) => tree[path];
const scriptFiles = readdirSync(LUA_ROOT)
  .filter((f) => f.endsWith('.lua'))
  .sort();
const libFiles = readdirSync(join(LUA_ROOT, 'lib'))
  .filter((f) => f.endsWith('.lua'))
  .sort();
const readLua = (file: string) => readFileSync(join(LUA_ROOT, file), 'utf8');

describe('Lua include resolution', () => {
  it('includes each helper once, before the code that uses it', () => {
    const out = resolveIncludes(
      'main.lua',
      files({
        'main.lua': '--@include "lib/a.lua"\n--@include "lib/b.lua"\nlocal x = a() + b()',
        'lib/a.lua': 'local function a() return 1 end',
        'lib/b.lua': '--@include "a.lua"\nlocal function b() return a() end',
      }),
    );
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

describe('Lua compile step (src/scripts/compile.ts)', () => {
  const FIELDS = "--@const\nlocal F = { plan = 'p', balance = 'b', size = 3 }\n";

  it('a constant table becomes literals: its declaration is gone and F.field is the value', () => {
    const out = compileLua(`${FIELDS}local v = redis.call('HGET', KEYS[1], F.plan)\nreturn F.size + tonumber(v)\n`);
    expect(out).toBe("local v = redis.call('HGET', KEYS[1], 'p')\nreturn 3 + tonumber(v)\n");
  });

  it('a bare use of a constant table becomes its constructor, built only where that code runs', () => {
    const out = compileLua(`${FIELDS}for name, field in pairs(F) do\nend\n`);
    expect(out).toBe("for name, field in pairs(({ plan = 'p', balance = 'b', size = 3 })) do\nend\n");
  });

  it('a field of another table that shares the name is left alone', () => {
    expect(compileLua(`${FIELDS}return t.F, t:F()\n`)).toBe('return t.F, t:F()\n');
  });

  it('an unknown field is a build error naming the file and line', () => {
    const source = `${FIELDS}local a = F.plan\nlocal b = F.cycle\n`;
    expect(() => compileLua(source, 'lua/charge.lua')).toThrowError(new LuaCompileError('lua/charge.lua:4: F has no field cycle'));
  });

  it('a --@const marker not followed by a table of literals is a build error naming the file and line', () => {
    expect(() => compileLua('local x = 1\n--@const\nlocal function f() end\n', 'a.lua')).toThrowError('a.lua:2: --@const must precede "local NAME = {"');
    expect(() => compileLua('--@const\nlocal F = { a = x }\n', 'b.lua')).toThrowError("b.lua:2: a --@const table holds only name = 'string' or number entries");
    expect(() => compileLua('--@const\nlocal F = { a = 1, a = 2 }\n', 'c.lua')).toThrowError('c.lua:2: F.a is set twice');
  });

  it('unused top-level helpers are dropped, and so is a helper used only by a dropped helper', () => {
    const out = compileLua(
      [
        'local function only_for_unused() return 2 end',
        'local function unused() return only_for_unused() end',
        'local function recursive(n) if n > 0 then return recursive(n - 1) end return 0 end',
        'local function used_by_used() return 1 end',
        'local function used() return used_by_used() end',
        'return used()',
      ].join('\n'),
    );
    expect(out).toBe('local function used_by_used() return 1 end\nlocal function used() return used_by_used() end\nreturn used()\n');
  });

  it('a nested local function is not a top-level helper and stays', () => {
    const source = 'local function outer()\nlocal function inner() return 1 end\nreturn 2\nend\nreturn outer()\n';
    expect(compileLua(source)).toBe(source);
  });

  it('comments, blank lines and indentation are gone; code keeps its tokens in order', () => {
    const source = [
      '--[[',
      '  header: a long comment',
      ']]',
      '',
      '-- a line comment',
      'local x = 1   -- a trailing comment',
      '',
      '    if x == 1 then',
      '      --[==[ a long comment',
      '      with ]] inside ]==]',
      '      x = x + 1',
      '    end',
      'return x',
    ].join('\n');
    expect(compileLua(source)).toBe('local x = 1\nif x == 1 then\nx = x + 1\nend\nreturn x\n');
  });

  it('"--" inside a string survives, in quotes of either kind, with escapes, and in long strings', () => {
    const source = [
      "local a = 'a -- b'",
      'local b = "--[[ not a comment ]]"',
      "local c = 'it\\'s -- here'",
      'local d = [[ -- kept ]]',
      'local e = [==[ ]] -- ]==] -- gone',
      'return a .. b .. c .. d .. e',
    ].join('\n');
    expect(compileLua(source)).toBe(
      [
        "local a = 'a -- b'",
        'local b = "--[[ not a comment ]]"',
        "local c = 'it\\'s -- here'",
        'local d = [[ -- kept ]]',
        'local e = [==[ ]] -- ]==]',
        'return a .. b .. c .. d .. e',
        '',
      ].join('\n'),
    );
  });

  it('an unfinished string or long comment is a build error naming the file and line', () => {
    expect(() => compileLua("local x = 1\nlocal s = 'open\n", 'u.lua')).toThrowError('u.lua:2: unfinished string');
    expect(() => compileLua('local x = 1\n--[[ never closed\n', 'v.lua')).toThrowError('v.lua:2: unfinished long comment');
  });

  describe('compiled code means what the source meant (run in Redis)', () => {
    let client: Awaited<ReturnType<typeof connectNodeRedis>>;
    beforeAll(async () => {
      client = await connectNodeRedis();
    });
    afterAll(() => client.close());

    it('the same reply from the source and from its compiled text', async () => {
      const source = [
        '--@const',
        "local F = { plan = 'p', size = 3, ratio = 0x10 }",
        '-- helpers',
        'local function unused() return 1 end',
        'local function twice(n) return n * 2 end',
        'local names = {}',
        'for name in pairs(F) do names[#names + 1] = name end',
        'table.sort(names)',
        "return { F.plan .. ' -- ' .. [[--x]], twice(F.size), F.ratio, table.concat(names, ',') }",
      ].join('\n');
      const run = async (text: string) => client.eval(text, { keys: [], arguments: [] });
      const expected = ['p -- --x', 6, 16, 'plan,ratio,size'];
      expect(await run(source)).toEqual(expected);
      expect(await run(compileLua(source))).toEqual(expected);
    });
  });
});

describe('Lua minify step (src/scripts/minify.ts)', () => {
  /** Compiled with short names: `helpers` is the build's map of lib/ top-level names. */
  const minify = (source: string, helpers: Record<string, string> = {}) => compileLua(source, 'm.lua', { rename: new Map(Object.entries(helpers)) });

  it('a table key and a field named like a local stay; the local is renamed', () => {
    const source = 'local plan = 1\nlocal t = { plan = plan, [plan] = 2 }\nreturn t.plan + t:plan(plan)\n';
    expect(minify(source)).toBe('local a=1\nlocal b={plan=a,[a]=2}\nreturn b.plan+b:plan(a)\n');
  });

  it("a string holding a local's name stays, in quotes of either kind and in long strings", () => {
    const source = 'local balance = \'balance\'\nreturn balance .. "balance" .. [[balance]]\n';
    expect(minify(source)).toBe('local a=\'balance\'\nreturn a.."balance"..[[balance]]\n');
  });

  it('keywords and the globals Redis gives scripts keep their names', () => {
    const source = "local n = tonumber(ARGV[1])\nif n == nil then return redis.call('GET', KEYS[1]) end\nreturn string.format('%d', n)\n";
    expect(minify(source)).toBe("local a=tonumber(ARGV[1])\nif a==nil then return redis.call('GET',KEYS[1])end\nreturn string.format('%d',a)\n");
  });

  it('shadowing works: an inner local never takes the name of one it can still see; `local x = x` reads the outer x', () => {
    const source = ['local x = 1', 'local function f(y)', '  local x = y + x', '  return x', 'end', 'return f(x) + x'].join('\n');
    expect(minify(source)).toBe(['local a=1', 'local function b(c)', 'local d=c+a', 'return d', 'end', 'return b(a)+a', ''].join('\n'));
  });

  it('sibling scopes reuse the same short names', () => {
    const source = 'for i = 1, 2 do local v = i end\nfor k, w in pairs({}) do end\ndo local z = 1 end\nlocal last = function(p) return p end\n';
    expect(minify(source)).toBe('for a=1,2 do local b=a end\nfor a,b in pairs({})do end\ndo local a=1 end\nlocal a=function(a)return a end\n');
  });

  it("lib/ top-level names take the build's one map wherever they stand, and a helper's locals are named as at the top", () => {
    const source = [
      'local function clock_now(ms) return ms end',
      'local function rare(a, b)',
      '  local function inner(c) return clock_now(c) end',
      '  return inner(a + b)',
      'end',
      'return rare(1, 2)',
    ].join('\n');
    expect(minify(source, { clock_now: 'A', inner: 'B' })).toBe(
      ['local function A(a)return a end', 'local function a(b,c)', 'local function B(a)return A(a)end', 'return B(b+c)', 'end', 'return a(1,2)', ''].join('\n'),
    );
  });

  it('a=b followed by a line that opens with ( stays two lines: no call is made of them', () => {
    expect(minify('local a, b, c = 1, 2, 3\na = b\n(c)()\n')).toBe('local a,b,c=1,2,3\na=b\n(c)()\n');
  });

  it('a space stays where tokens would run together: words, a number before "..", "- -", "[ [["', () => {
    const source = "local s = 1 .. 'x'\nlocal n = 1 - -2\nlocal t = {}\nt[ [[k]] ] = 3\nreturn s, n, t, 0x10 .. ''\n";
    expect(minify(source)).toBe("local a=1 ..'x'\nlocal b=1- -2\nlocal c={}\nc[ [[k]]]=3\nreturn a,b,c,0x10 ..''\n");
  });

  it('a name that is neither a local nor a Redis global is a build error naming the file and line', () => {
    expect(() => minify('local a = 1\nreturn b\n')).toThrowError(new LuaCompileError('m.lua:2: b is neither a local nor a global Redis gives scripts'));
  });

  describe('minified code means what the source meant (run in Redis)', () => {
    let client: Awaited<ReturnType<typeof connectNodeRedis>>;
    beforeAll(async () => {
      client = await connectNodeRedis();
    });
    afterAll(() => client.close());

    it('the same reply from the source and from its minified text', async () => {
      const source = [
        '--@const',
        "local F = { plan = 'p', size = 3 }",
        "local function helper(x, ...) return x + select('#', ...) end",
        'local x = 10',
        'local function counter()',
        '  local n = 0',
        '  return function(step) n = n + (step or 1) return n end',
        'end',
        'local c = counter()',
        'c() c(5)',
        'local i = 0',
        'repeat local x = i * 2 i = i + 1 until x >= 6',
        'local t = { plan = F.plan, [F.size] = x, x }',
        'local words = {}',
        "for word in string.gmatch('a b c', '%a+') do words[#words + 1] = word:upper() end",
        'local s = 1 .. F.plan',
        'do local x = -x t.neg = x end',
        "return { helper(x, 1, 2), c(), i, t.plan, t[3], t[1], table.concat(words, ','), s, t.neg, x - -1 }",
      ].join('\n');
      const run = async (text: string) => client.eval(text, { keys: [], arguments: [] });
      const expected = [12, 7, 4, 'p', 10, 10, 'A,B,C', '1p', -10, 11];
      expect(await run(source)).toEqual(expected);
      const minified = minify(source, { helper: 'A' });
      expect(minified).not.toMatch(/\b(helper|counter|words)\b/);
      expect(await run(minified)).toEqual(expected);
    });
  });
});

describe('script headers (lua/*.lua as written)', () => {
  // The prologue (lua/lib/prologue.lua) reads the shared layout: a movement's first four keys
  // and arguments, a look's first one; a script's own follow them (docs/scripts.md).
  const LAYOUT = {
    prologue_move: { keys: ['account', 'cycles', 'journal', 'history'], args: ['nowMs', 'journalTrim', 'journalBound', 'historyDays'] },
    prologue_look: { keys: ['account'], args: ['nowMs'] },
  } as const;
  const prologueOf = (body: string) =>
    body.includes('prologue_move(KEYS, ARGV)') ? 'prologue_move' : body.includes('prologue_look(KEYS, ARGV)') ? 'prologue_look' : undefined;

  it.each(scriptFiles)('%s declares every KEYS and ARGV it uses, and uses every one it declares', (file) => {
    const source = readLua(file);
    const header = parseHeader(source, file);
    const body = source.slice(source.indexOf(']]') + 2);
    const used = (kind: string) => new Set([...body.matchAll(new RegExp(`${kind}\\[(\\d+)\\]`, 'g'))].map((m) => Number(m[1])));
    const prologue = prologueOf(body);
    const shared = prologue ? LAYOUT[prologue] : { keys: [], args: [] };
    // A list of keys last (KEYS[n...]) is read by a loop from n on.
    const rest = header.keys.find((k) => k.rest);
    if (rest) expect(body, file).toContain(`for i = ${rest.index}, #KEYS do`);
    const keys = new Set([...used('KEYS'), ...shared.keys.map((_, i) => i + 1).filter((i) => i <= header.keys.length), ...(rest ? [rest.index] : [])]);
    const args = new Set([...used('ARGV'), ...shared.args.map((_, i) => i + 1)]);
    expect([...keys].sort((a, b) => a - b)).toEqual(header.keys.map((k) => k.index));
    expect([...args].sort((a, b) => a - b)).toEqual(header.args.map((a) => a.index));
    expect(header.name).toBe(file.replace(/\.lua$/, ''));
  });

  it.each(scriptFiles)("%s opens with the shared layout: the subject's keys and the shared arguments at the same positions as every script", (file) => {
    const source = readLua(file);
    const header = parseHeader(source, file);
    const body = source.slice(source.indexOf(']]') + 2);
    const prologue = prologueOf(body);
    if (!prologue) {
      // Scripts of no account (an Idempotency-Key record, a policy's counts, the sweep index)
      // still take the clock first when they need one.
      if (header.args.some((a) => a.name === 'nowMs')) expect(header.args[0]!.name, file).toBe('nowMs');
      if (header.keys.some((k) => k.name === 'account')) expect(header.keys[0]!.name, file).toBe('account');
      return;
    }
    const layout = LAYOUT[prologue];
    expect(header.keys.slice(0, layout.keys.length).map((k) => k.name)).toEqual(layout.keys.slice(0, header.keys.length));
    expect(header.args.slice(0, layout.args.length).map((a) => a.name)).toEqual(layout.args);
    // The shared positions are read by the prologue only; each of the script's own once.
    for (const [kind, count] of [
      ['KEYS', layout.keys.length],
      ['ARGV', layout.args.length],
    ] as const) {
      const reads = [...body.matchAll(new RegExp(`${kind}\\[(\\d+)\\]`, 'g'))].map((m) => Number(m[1]));
      for (const index of reads) expect(index, `${file}: ${kind}[${index}] is the prologue's`).toBeGreaterThan(count);
      expect(new Set(reads).size, `${file}: a ${kind} read twice`).toBe(reads.length);
    }
  });

  it.each(libFiles.filter((file) => file !== 'prologue.lua'))('lib/%s is helpers only: it reads no KEYS or ARGV of its own', (file) => {
    const body = readLua(join('lib', file))
      .replace(/--\[\[[\s\S]*?\]\]/g, '')
      .replace(/--.*$/gm, '');
    expect(body).not.toMatch(/\b(KEYS|ARGV)\[/);
  });

  it('lib/codes.lua is the one list of codes: TypeScript reads it from the bundle, every code distinct', () => {
    const lua = readLua(join('lib', 'codes.lua'));
    const fromLua = Object.fromEntries([...lua.matchAll(/^\s+([A-Z_]+) = (\d+),?$/gm)].map((m) => [m[1], Number(m[2])]));
    expect(Object.keys(fromLua).length).toBeGreaterThan(20);
    expect(fromLua).toEqual({ ...Code });
    expect(new Set(Object.values(fromLua)).size).toBe(Object.keys(fromLua).length);
  });
});

describe('reply grammar: each header declares its reply by name (src/scripts/replyGrammar.ts)', () => {
  it('a Returns line lists the fields after the code, each "name type"; ? may be absent, ... is the rest', () => {
    expect(parseReturns(['Returns: {code, charged integer, note string?, ...days {day integer, spent integer}}'], 'x.lua')).toEqual([
      {
        codes: [],
        fields: [
          { name: 'charged', type: { kind: 'integer' }, optional: false, rest: false },
          { name: 'note', type: { kind: 'string' }, optional: true, rest: false },
          {
            name: 'days',
            type: {
              kind: 'group',
              fields: [
                { name: 'day', type: { kind: 'integer' }, optional: false, rest: false },
                { name: 'spent', type: { kind: 'integer' }, optional: false, rest: false },
              ],
            },
            optional: false,
            rest: true,
          },
        ],
      },
    ]);
  });

  it('a Returns CODE|CODE line gives those codes their own reply; a declaration may span lines', () => {
    const shapes = parseReturns(['Returns KEY_REFUSED|NO_ACCOUNT: {code, reason', "'a'|'b'}", 'Returns: {code, ok 0|1, limit json {max integer}}'], 'x.lua');
    expect(shapes.map((s) => s.codes)).toEqual([['KEY_REFUSED', 'NO_ACCOUNT'], []]);
    expect(shapes[0]!.fields[0]!.type).toEqual({ kind: 'oneOf', values: ['a', 'b'] });
    expect(shapes[1]!.fields.map((f) => f.type.kind)).toEqual(['flag', 'jsonObject']);
  });

  it('refuses a reply without code first, a field without a type, a rest that is not last, and a header without a plain Returns', () => {
    expect(() => parseReturns(['Returns: {charged integer}'], 'x.lua')).toThrowError(ReplyGrammarError);
    expect(() => parseReturns(['Returns: {code, charged}'], 'x.lua')).toThrowError(/name type/);
    expect(() => parseReturns(['Returns: {code, ...a integer, b integer}'], 'x.lua')).toThrowError(/only the last/);
    expect(() => parseReturns(['Returns OK: {code}'], 'x.lua')).toThrowError(/no plain/);
  });

  it.each(scriptFiles)('%s declares its reply', (file) => {
    expect(parseHeader(readLua(file), file).returns.length).toBeGreaterThan(0);
  });

  it("the generated decoders read a reply by the header's names", () => {
    expect(charge.decode([Code.OK, 5, 95, 5, 95, 'c1=5', 1, 0])).toEqual({
      code: Code.OK,
      charged: 5,
      balance: 95,
      needed: 5,
      available: 95,
      sources: 'c1=5',
      events: 1,
      eventsDropped: 0,
    });
    // Optional fields at the end may be left off: a charge that wrote no event.
    expect(charge.decode([Code.OK, 5, 95, 5, 95, 'c1=5'])).toMatchObject({ sources: 'c1=5', events: undefined, eventsDropped: undefined });
    expect(refund.decode([Code.OK, 5, 100, 0, 0, 'g2', 3, 'cycle:1', 2])).toEqual({
      code: Code.OK,
      refunded: 5,
      available: 100,
      events: 0,
      eventsDropped: 0,
      sources: [
        { grantId: 'g2', amount: 3 },
        { grantId: 'cycle:1', amount: 2 },
      ],
    });
    expect(verifyKey.decode([Code.KEY_REFUSED, 'expired'])).toEqual({ code: Code.KEY_REFUSED, reason: 'expired' });
    expect(creditHistory.decode([Code.OK, 20000, 3, 1, 20001, 4, 0])).toEqual({
      code: Code.OK,
      days: [
        { day: 20000, spent: 3, refunded: 1 },
        { day: 20001, spent: 4, refunded: 0 },
      ],
    });
    expect(reconcile.decode([Code.OK, 1, 2, 90, 10, 0, 90, 10, 0, 3])).toMatchObject({ complete: true, cycle: 2, journalBalance: 90, balance: 90, entries: 3 });
    const hold = ['h1', 'items', 'open', 'api', 2, 3, 1, 8, 0, 0, 0, 0, 0, 0, 1, 1000, 0, 61000, '', 1, 'c1=8', 'timeout', 2];
    expect(readHold.decode([Code.OK, hold])).toMatchObject({
      holds: [{ id: 'h1', kind: 'items', reserved: 8, sources: 'c1=8', failed: [{ label: 'timeout', count: 2 }] }],
    });
    expect(listHolds.decode([Code.OK, 3, 1, 'h3', 'h2'])).toEqual({ code: Code.OK, total: 3, active: 1, holdIds: ['h3', 'h2'] });
    expect(listHolds.decode([Code.HOLDS_DUE, 'h1'])).toEqual({ code: Code.HOLDS_DUE, due: ['h1'] });
    const refused = openHold.decode([Code.INSUFFICIENT, '{"balance":3,"needed":8,"available":5}', 0, 0, 0]);
    expect(refused).toEqual({ code: Code.INSUFFICIENT, refusal: { balance: 3, needed: 8, available: 5 }, storedCode: 0, events: 0, eventsDropped: 0 });
  });

  it('a reply that is not what its header declares is a ReplyShapeError, never a wrong value', () => {
    expect(() => charge.decode([99, 0, 0, 0, 0, 0])).toThrowError(ReplyShapeError);
    expect(() => readHold.decode([Code.OK, ['h1', 'neither', 'open']])).toThrowError(ReplyShapeError);
  });
});

describe('script bundle', () => {
  it('is up to date with lua/ (run `npm run build:lua` after editing a script): every generated file, and no other', () => {
    const files = renderGenerated();
    for (const [path, text] of files) expect(readFileSync(join(SCRIPTS_DIR, path), 'utf8'), path).toBe(text);
    const written = readdirSync(join(SCRIPTS_DIR, 'generated'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    expect(written.map((f) => `generated/${f}`).sort()).toEqual([...files.keys()].filter((p) => p.startsWith('generated/')).sort());
  });

  it('runs from the source tree as it is: src/index.ts under node --experimental-transform-types', async () => {
    const { execFile } = await import('node:child_process');
    const root = join(LUA_ROOT, '..');
    const code = "const m = await import('./src/index.ts'); console.log(typeof m.createTollgate);";
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--experimental-transform-types', '--disable-warning=ExperimentalWarning', '--input-type=module', '-e', code],
        { cwd: root },
        (error, stdout) => (error ? reject(error) : resolve(stdout)),
      ),
    );
    expect(out.trim()).toBe('function');
  });

  it('is readable text, one module per script and per lib/ file, none over 40 KB, each helper once', () => {
    const files = renderGenerated();
    for (const file of scriptFiles) expect(files.has(`generated/${file.replace(/\.lua$/, '.ts')}`), file).toBe(true);
    for (const [path, text] of files) {
      expect(Buffer.byteLength(text), path).toBeLessThanOrEqual(40 * 1024);
      expect(
        text.split('\n').every((line) => line.length <= 4000),
        path,
      ).toBe(true);
    }
    // A helper's compiled text stands in one lib/ module; a script's module names it.
    const helpers = [...files]
      .filter(([path]) => path.startsWith('generated/lib/'))
      .flatMap(([, text]) => [...text.matchAll(/(?:^|`)local function (\w+)/gm)].map((m) => m[1]!));
    expect(helpers.length).toBeGreaterThan(20);
    // A script's own local functions may take a short name a lib/ helper it does not ship has.
    const helpersOf = (lib: string) => [...(files.get(`generated/lib/${lib}.ts`) ?? '').matchAll(/(?:^|`)local function (\w+)/gm)].map((m) => m[1]!);
    for (const file of scriptFiles) {
      const text = files.get(`generated/${file.replace(/\.lua$/, '.ts')}`)!;
      const shipped = [...text.matchAll(/from "\.\/lib\/(\w+)\.ts"/g)].flatMap((m) => helpersOf(m[1]!));
      const defined = [...text.matchAll(/(?:^|`)local function (\w+)/gm)].map((m) => m[1]!);
      expect(
        defined.filter((name) => shipped.includes(name)),
        file,
      ).toEqual([]);
    }
  });

  it('holds one script per lua/*.lua file, named by its header', () => {
    expect(Object.keys(SCRIPTS).sort()).toEqual(scriptFiles.map((f) => parseHeader(readLua(f), f).name).sort());
  });

  it.each(scriptFiles)('%s ships compiled (no comments, no blank lines) with the SHA1 of that text', (file) => {
    const name = file.replace(/\.lua$/, '');
    const script = SCRIPTS[name]!;
    expect(script.name).toBe(name);
    expect(script.source).toBe(shippedSource(file));
    expect(createHash('sha1').update(script.source).digest('hex')).toBe(script.sha1);
    for (const line of script.source.split('\n').slice(0, -1)) {
      expect(line, `${name}: ${line}`).not.toMatch(/^\s*$|^\s*--|^\s/);
    }
    expect(script.source).not.toMatch(/\bCODE\.|\bACCOUNT\.|--@include/);
  });

  it.each(scriptFiles)('%s: each line of its minified text is that line of the readable build, with only names and spaces changed', (file) => {
    const code = (line: string) => tokenize(line).filter((t) => t.kind !== 'space');
    const minified = shippedSource(file).split('\n');
    const readable = shippedSource(file, LUA_ROOT, false).split('\n');
    expect(minified.length).toBe(readable.length);
    expect(shippedSource(file).length).toBeLessThan(shippedSource(file, LUA_ROOT, false).length);
    readable.forEach((line, i) => {
      const [a, b] = [code(line), code(minified[i]!)];
      expect(
        b.map((t) => t.kind),
        line,
      ).toEqual(a.map((t) => t.kind));
      const kept = (t: { kind: string; text: string }, j: number, all: Array<{ text: string }>) =>
        t.kind !== 'name' || LUA_KEYWORDS.has(t.text) || LUA_GLOBALS.has(t.text) || all[j - 1]?.text === '.' || all[j - 1]?.text === ':';
      expect(
        b.map((t, j) => (kept(a[j]!, j, a) ? t.text : '')),
        line,
      ).toEqual(a.map((t, j) => (kept(t, j, a) ? t.text : '')));
    });
  });

  it('Redis computes the same SHA1 for every shipped script (SCRIPT LOAD)', async () => {
    const client = await connectNodeRedis();
    try {
      for (const [name, script] of Object.entries(SCRIPTS)) {
        expect(await client.sendCommand(['SCRIPT', 'LOAD', script.source]), name).toBe(script.sha1);
      }
    } finally {
      await client.close();
    }
  });
});

describe('generated command builders follow the headers', () => {
  const settings = Object.fromEntries(SETTINGS.map((s) => [s, `S:${s}`])) as unknown as Settings;
  const subjectKeys = Object.fromEntries(SUBJECT_KEYS.map((k) => [k, `K:${k}`])) as unknown as SubjectKeyNames;
  // A list of keys (KEYS[n...]) is given one key here, so it reads as any other key.
  const lists = new Set(
    scriptFiles.flatMap((file) =>
      parseHeader(readLua(file), file)
        .keys.filter((k) => k.rest)
        .map((k) => k.name),
    ),
  );
  const params = new Proxy({}, { get: (_, name) => (lists.has(String(name)) ? [`P:${String(name)}`] : `P:${String(name)}`) });

  it.each(scriptFiles)('%s: EVALSHA, its sha1, numkeys, then the keys and the arguments in header order', (file) => {
    const header = parseHeader(readLua(file), file);
    const script = SCRIPTS[header.name]!;
    const keyWord = (name: string) => ((SUBJECT_KEYS as readonly string[]).includes(name) ? `K:${name}` : `P:${name}`);
    const argWord = (name: string) => (name === NOW_ARG ? 'NOW' : (SETTINGS as readonly string[]).includes(name) ? `S:${name}` : `P:${name}`);
    expect(script.command('NOW', settings, subjectKeys, params)).toEqual([
      'EVALSHA',
      script.sha1,
      String(header.keys.length),
      ...header.keys.map((k) => keyWord(k.name)),
      ...header.args.map((a) => argWord(a.name)),
    ]);
  });

  it.each(scriptFiles)('%s: by function, FCALL and its function, then the very words of its EVALSHA: the routing key at words[3] either way', (file) => {
    const script = SCRIPTS[parseHeader(readLua(file), file).name]!;
    const evalsha = script.command('NOW', settings, subjectKeys, params);
    const fcall = script.command('NOW', settings, subjectKeys, params, true);
    expect(fcall).toEqual(['FCALL', script.fn, ...evalsha.slice(2)]);
    expect(fcall[3]).toBe(evalsha[3]);
    expect(script.command('NOW', settings, subjectKeys, params, false)).toEqual(evalsha);
  });

  it('verifyKey.command puts the account key (which holds the API keys) at words[3], the routing key, then now', () => {
    const keys = new SubjectKeys('tg', 'acct_1');
    const words = verifyKey.command('1768478400000', settings, keys, {
      surface: 'api',
      cost: 2,
      credits: 1,
      stagger: 0,
      keyId: '0123456789',
      keyDigest: 'digest',
    });
    expect(words.slice(0, 3)).toEqual(['EVALSHA', verifyKey.sha1, '1']);
    expect(words[3]).toBe('tg:{acct_1}:a');
    expect(words.slice(4)).toEqual(['1768478400000', 'api', '2', '1', '0', 'S:plansVersion', '0123456789', 'digest']);
  });

  it('admitPolicy.command routes by the policy counters of the subject, in its slot', () => {
    const keys = new SubjectKeys('tg', 'ip:1.2.3.4');
    const words = admitPolicy.command('-1', settings, keys, { counters: keys.policyCounters('anon', 'api'), cost: 1, windows: '10/60', stagger: 0 });
    expect(words.slice(0, 4)).toEqual(['EVALSHA', admitPolicy.sha1, '1', 'tg:{ip:1.2.3.4}:r:anon.api']);
    expect(words.slice(4)).toEqual(['-1', '1', '10/60', '0']);
  });
});

describe('the function library (one per build: FUNCTION LOAD, FCALL)', () => {
  const id = LIBRARY.name.replace(/^tollgate_/, '');
  /** A lib/ helper's name in the shipped text (the build's one map of helper names). */
  const shipped = (name: string) => buildNames()?.get(name) ?? name;
  /** Each function's body in the library's text, by script name. */
  const bodies = new Map(
    Object.keys(SCRIPTS).map((name) => {
      const open = LIBRARY.source.indexOf(`${functionOpen(id, name)}\n`);
      const from = open + functionOpen(id, name).length + 1;
      return [name, open < 0 ? '' : LIBRARY.source.slice(from, LIBRARY.source.indexOf(`\n${FUNCTION_CLOSE}`, from))];
    }),
  );

  it('is named after the build: tollgate_<10 hex of the SHA1 of its text written without a name>, each function tg<id>_<script>', () => {
    expect(LIBRARY.name).toMatch(/^tollgate_[0-9a-f]{10}$/);
    expect(LIBRARY.source.startsWith(`#!lua name=${LIBRARY.name}\n`)).toBe(true);
    const helpers = LIBRARY.source.slice(LIBRARY.source.indexOf('\n') + 1, LIBRARY.source.indexOf('redis.register_function{') - 1);
    const unnamed = functionLibrary('', helpers, Object.fromEntries(bodies)).source;
    expect(createHash('sha1').update(unnamed).digest('hex').slice(0, 10)).toBe(id);
    for (const [name, script] of Object.entries(SCRIPTS)) expect(script.fn, name).toBe(`tg${id}_${name}`);
  });

  it.each(Object.keys(SCRIPTS))("%s: its function runs the script's own code word for word, after the helpers", (name) => {
    const body = bodies.get(name)!;
    expect(body.length, name).toBeGreaterThan(0);
    expect(SCRIPTS[name]!.source.endsWith(`\n${body}\n`) || SCRIPTS[name]!.source === `${body}\n`).toBe(true);
    const helpers = ['clock_now', 'account_load', 'admit_account', 'windows_count', 'hold_load'].map(shipped);
    expect(body).not.toMatch(new RegExp(`^local function (${helpers.join('|')})\\(`, 'm'));
  });

  it('defines every helper once, at the top, and none that no script uses', () => {
    const helpers = LIBRARY.source.slice(0, LIBRARY.source.indexOf('redis.register_function'));
    const names = [...helpers.matchAll(/^local function (\w+)\(/gm)].map((m) => m[1]!);
    expect(new Set(names).size).toBe(names.length);
    for (const name of ['clock_now', 'admit_account', 'windows_count', 'windows_many', 'cycle_current_account', 'holds_due', 'journal_append'])
      expect(names).toContain(shipped(name));
    for (const name of names) expect(LIBRARY.source.split(new RegExp(`\\b${name}\\b`)).length, name).toBeGreaterThan(2);
  });

  it('loads (FUNCTION LOAD) with one function per script, each allowed the keys its script may touch', async () => {
    const server = await startRedisServer();
    const client = await connectNodeRedis(server.url);
    try {
      expect(await client.sendCommand(['FUNCTION', 'LOAD', LIBRARY.source])).toBe(LIBRARY.name);
      const [library] = (await rawCommand(server.port, ['FUNCTION', 'LIST', 'LIBRARYNAME', LIBRARY.name])) as unknown[][];
      const functions = library![library!.indexOf('functions') + 1] as unknown[][];
      const listed = functions.map((f) => [f[f.indexOf('name') + 1], f[f.indexOf('flags') + 1]]);
      expect(listed.map(([name]) => name).sort()).toEqual(
        Object.values(SCRIPTS)
          .map((s) => s.fn)
          .sort(),
      );
      for (const [, flags] of listed) expect(flags).toEqual(['allow-cross-slot-keys']);
      // The same call answers the same by FCALL and by EVALSHA.
      const keys = new SubjectKeys('lib', 'nobody');
      const call = (viaFunction: boolean) =>
        client.sendCommand(
          admitPolicy.command(
            '1768478400000',
            {} as Settings,
            keys,
            { counters: keys.policyCounters('anon', 'api'), cost: 1, windows: '10/60', stagger: 0 },
            viaFunction,
          ),
        );
      await client.sendCommand(['SCRIPT', 'LOAD', admitPolicy.source]);
      expect(await call(true)).toEqual([Code.OK, '10/60', 9, 60_000]);
      expect(await call(false)).toEqual([Code.OK, '10/60', 8, 60_000]);
    } finally {
      await client.close();
      await server.stop();
    }
  });
});

const verbsOf = (recorder: Recorder) => recorder.sent.map((c) => `${c.words[0]} ${c.script}${c.noscript ? ' NOSCRIPT' : ''}`);

// A server of this file's own: flushing the shared server's script cache or functions would
// turn other files' one-command calls into two.
describe('scripts as functions: the library is loaded where it is missing', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(() => server.stop());

  describe.each(CLIENT_KINDS)('through %s', (kind) => {
    let client: TestClient;
    let recorder: Recorder;
    let tg: Tollgate;
    beforeAll(async () => {
      client = await connectTestClient(kind, { url: server.url });
      recorder = recording(client.adapter);
      tg = createTollgate({ plans: EXAMPLE_PLANS, redis: recorder.client, prefix: `functions-${kind}`, clock: new ManualClock().fn });
    });
    afterAll(() => client.close());

    it("sends FCALL; after FUNCTION FLUSH, loads the library once (at the call's key) and sends it again, then FCALL alone", async () => {
      const id = accountId();
      await client.command(['FUNCTION', 'FLUSH']);
      recorder.clear();
      await tg.accounts.create(id, { plan: 'pro' });
      expect(verbsOf(recorder)).toEqual(['FCALL createAccount NOSCRIPT', 'FCALL createAccount']);
      expect(recorder.loads).toEqual([new SubjectKeys(`functions-${kind}`, id).account]);
      recorder.clear();
      expect(await tg.credits.charge(id, { required: 1 })).toMatchObject({ ok: true, charged: 1, balance: 4999 });
      expect(verbsOf(recorder)).toEqual(['FCALL charge']);
      expect(recorder.loads).toEqual([]);
      expect(await client.command(['FUNCTION', 'LIST', 'LIBRARYNAME', LIBRARY.name])).toHaveLength(1);
    });

    it('calls that find it missing at once share one load', async () => {
      const ids = Array.from({ length: 8 }, () => accountId());
      await client.command(['FUNCTION', 'FLUSH']);
      recorder.clear();
      await Promise.all(ids.map((id) => tg.accounts.create(id, { plan: 'free' })));
      expect(recorder.loads).toHaveLength(1);
      expect(recorder.calls.map((c) => c.words[0])).toEqual(ids.map(() => 'FCALL'));
    });

    it('a reply after the load is read like any other (a not-found code still throws its error)', async () => {
      await client.command(['FUNCTION', 'FLUSH']);
      await expect(tg.limits.admit(accountId('nobody'))).rejects.toThrowError(AccountNotFoundError);
    });

    it("a function refused up front where a script is checked at its first write (maxmemory) gets EVALSHA's answer: reads answer, writes fail as they did", async () => {
      const id = accountId();
      await tg.accounts.create(id, { plan: 'pro' });
      await client.command(['SCRIPT', 'LOAD', SCRIPTS.readAccount!.source]);
      await client.command(['CONFIG', 'SET', 'maxmemory', '1']);
      try {
        recorder.clear();
        expect((await tg.accounts.limits(id)).name).toBe('pro');
        expect(verbsOf(recorder)).toEqual(['FCALL readAccount', 'EVALSHA readAccount']);
        await expect(tg.credits.charge(id, { required: 1 })).rejects.toThrowError(/OOM/);
        recorder.clear();
        await tg.accounts.limits(id);
        expect(verbsOf(recorder)).toEqual(['FCALL readAccount', 'EVALSHA readAccount']);
      } finally {
        await client.command(['CONFIG', 'SET', 'maxmemory', '0']);
      }
      expect(await tg.credits.charge(id, { required: 1 })).toMatchObject({ ok: true, balance: 4999 });
    });

    it('any other server error is not sent again: one command, a StoreUnavailableError', async () => {
      await expectOneCommandPerServerError(tg, client, recorder, `functions-${kind}`, 'FCALL admit');
    });
  });
});

describe('a server that refuses functions: EVALSHA for good, and every call works', () => {
  let server: RedisServer;
  let renamed: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
    // A user who may call functions but not load them, and one who may do neither.
    await rawCommand(server.port, ['ACL', 'SETUSER', 'noload', 'on', '>pw', '~*', '&*', '+@all', '-function']);
    await rawCommand(server.port, ['ACL', 'SETUSER', 'nofcall', 'on', '>pw', '~*', '&*', '+@all', '-function', '-fcall']);
    // A server whose FUNCTION and FCALL were renamed away: as one without functions (Redis 6).
    renamed = await startRedisServer({ args: ['--rename-command', 'FUNCTION', 'FUNCTION_X', '--rename-command', 'FCALL', 'FCALL_X'] });
  });
  afterAll(async () => {
    await server?.stop();
    await renamed?.stop();
  });

  const cases = [
    {
      label: 'an ACL user without FUNCTION LOAD',
      url: () => server.url.replace('redis://', 'redis://noload:pw@'),
      first: ['FCALL createAccount NOSCRIPT', 'EVALSHA createAccount NOSCRIPT', 'EVAL createAccount'],
      loads: 1,
    },
    {
      label: 'an ACL user without FCALL',
      url: () => server.url.replace('redis://', 'redis://nofcall:pw@'),
      first: ['FCALL createAccount', 'EVALSHA createAccount NOSCRIPT', 'EVAL createAccount'],
      loads: 0,
    },
    {
      label: 'a server without FUNCTION and FCALL',
      url: () => renamed.url,
      first: ['FCALL createAccount', 'EVALSHA createAccount NOSCRIPT', 'EVAL createAccount'],
      loads: 0,
    },
  ];

  describe.each(CLIENT_KINDS)('through %s', (kind) => {
    it.each(cases)('$label', async ({ url, first, loads }) => {
      const client = await connectTestClient(kind, { url: url() });
      try {
        await client.command(['SCRIPT', 'FLUSH']);
        const recorder = recording(client.adapter);
        const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: recorder.client, prefix: `refused-${kind}`, clock: new ManualClock().fn });
        const id = accountId();
        await tg.accounts.create(id, { plan: 'pro' });
        expect(verbsOf(recorder)).toEqual(first);
        expect(recorder.loads).toHaveLength(loads);
        recorder.clear();
        expect(await tg.limits.admit(id, { credits: 1 })).toMatchObject({ ok: true, allowed: true });
        expect(await tg.credits.charge(id, { required: 2 })).toMatchObject({ ok: true, charged: 2, balance: 4998 });
        const hold = await tg.holds.open(id, { items: 2, perItem: { required: 1 } });
        expect(hold).toMatchObject({ ok: true });
        expect((await tg.usage(id)).credits).toMatchObject({ balance: 4996, held: 2 });
        expect(recorder.sent.every((c) => c.words[0] === 'EVALSHA' || c.words[0] === 'EVAL')).toBe(true);
        expect(recorder.loads).toEqual([]);
      } finally {
        await client.close();
      }
    });
  });
});

describe('scripts: "eval" runs every script by EVALSHA, and by EVAL once after NOSCRIPT', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(() => server.stop());

  describe.each(CLIENT_KINDS)('through %s', (kind) => {
    let client: TestClient;
    let recorder: Recorder;
    let tg: Tollgate;
    beforeAll(async () => {
      client = await connectTestClient(kind, { url: server.url });
      recorder = recording(client.adapter);
      tg = createTollgate({ plans: EXAMPLE_PLANS, redis: recorder.client, prefix: `scripts-${kind}`, clock: new ManualClock().fn, scripts: 'eval' });
    });
    afterAll(() => client.close());

    it('sends EVAL once after NOSCRIPT, then EVALSHA again: the script is cached by that EVAL', async () => {
      const id = accountId();
      await client.command(['SCRIPT', 'FLUSH']);
      recorder.clear();
      await tg.accounts.create(id, { plan: 'pro' });
      expect(verbsOf(recorder)).toEqual(['EVALSHA createAccount NOSCRIPT', 'EVAL createAccount']);
      await client.command(['SCRIPT', 'FLUSH']);
      expect(await client.command(['SCRIPT', 'EXISTS', SCRIPTS.charge!.sha1])).toEqual([0]);
      recorder.clear();
      expect(await tg.credits.charge(id, { required: 1 })).toMatchObject({ ok: true, charged: 1, balance: 4999 });
      expect(await tg.credits.charge(id, { required: 1 })).toMatchObject({ ok: true, charged: 1, balance: 4998 });
      expect(verbsOf(recorder)).toEqual(['EVALSHA charge NOSCRIPT', 'EVAL charge', 'EVALSHA charge']);
      expect(await client.command(['SCRIPT', 'EXISTS', SCRIPTS.charge!.sha1])).toEqual([1]);
    });

    it('sends no FCALL and loads nothing, whatever the calls (counted by command)', async () => {
      const id = accountId();
      recorder.clear();
      await tg.accounts.create(id, { plan: 'pro' });
      await tg.limits.admit(id, { credits: 1 });
      const { key } = await tg.keys.issue(id);
      await tg.keys.verify(key, { credits: 1 });
      await tg.credits.charge(id, { required: 1 });
      const hold = await tg.holds.open(id, { items: 1, perItem: { required: 1 } });
      if (hold.ok) await tg.holds.settle(id, hold.hold.id, { itemId: 'a' });
      const counts = new Map<string, number>();
      for (const c of recorder.sent) counts.set(c.words[0]!, (counts.get(c.words[0]!) ?? 0) + 1);
      // EVAL only after a NOSCRIPT: the first call of each script on this server.
      expect([...counts.keys()].sort()).toEqual(['EVAL', 'EVALSHA']);
      expect(counts.get('EVALSHA')).toBeGreaterThanOrEqual(8);
      expect(counts.get('EVAL')).toBe(recorder.sent.filter((c) => c.noscript).length);
      expect(recorder.loads).toEqual([]);
      expect(await client.command(['FUNCTION', 'LIST'])).toEqual([]);
    });

    it('a reply of the EVAL is read like any other (a not-found code still throws its error)', async () => {
      await client.command(['SCRIPT', 'FLUSH']);
      await expect(tg.limits.admit(accountId('nobody'))).rejects.toThrowError(AccountNotFoundError);
    });

    it('any other server error is not retried: one command, a StoreUnavailableError', async () => {
      await expectOneCommandPerServerError(tg, client, recorder, `scripts-${kind}`, 'EVALSHA admit');
    });
  });

  it('is refused when neither "functions" nor "eval"', () => {
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: recording(undefined).client, scripts: 'lua' as never })).toThrowError(
      /scripts must be "functions" or "eval"/,
    );
  });
});

/** An admit on an account key that is not a hash fails in the script: each call is one command, never sent again. */
async function expectOneCommandPerServerError(tg: Tollgate, client: TestClient, recorder: Recorder, prefix: string, verb: string): Promise<void> {
  const id = accountId();
  await tg.accounts.create(id, { plan: 'free' });
  const accountKey = new SubjectKeys(prefix, id).account;
  await client.command(['DEL', accountKey]);
  await client.command(['SET', accountKey, 'not a hash']);
  recorder.clear();
  await expect(tg.limits.admit(id)).rejects.toThrowError(StoreUnavailableError);
  await expect(tg.limits.admit(id)).rejects.toThrowError(/WRONGTYPE/);
  expect(verbsOf(recorder)).toEqual([verb, verb]);
}
