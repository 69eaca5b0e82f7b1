// The published package: what `npm pack` makes, checked as a new user gets
// it. One minified CommonJS build with ESM wrappers and declarations for every subpath (., ./model,
// ./express, ./koa, ./fastify, ./hono) whose comments are src/'s summaries, the `tollgate` bin,
// publint --strict and attw clean, at most 120 KB packed, the Lua inside the build, and the README quick start
// (examples/quickstart.ts) running from the tarball as written under ESM, CommonJS and
// TypeScript (nodenext and bundler).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as scripts from '../src/scripts/bundle.generated.ts';
import { trimComments } from '../tsup.config.ts';
import { oneLine, quickStartPrints } from './helpers/quickstart.ts';
import { redisUrl } from './helpers/redis.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const modules = join(root, 'node_modules');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const SUBPATHS = {
  '.': 'index',
  './errors': 'errors',
  './http': 'http',
  './model': 'model/index',
  './express': 'express',
  './koa': 'koa',
  './fastify': 'fastify',
  './hono': 'hono',
};
const MAX_PACKED_BYTES = 120_000;
/** The end of `npm run build`: tsup.config.ts run as a program trims the declarations' comments. */
const TRIM_STEP = 'node --experimental-strip-types --disable-warning=ExperimentalWarning tsup.config.ts';

describe('package manifest', () => {
  it('the root exports at most 15 values (createTollgate, the two adapters, TollgateError, isTollgateError); the rest live under subpaths', async () => {
    const root = await import('../src/index.ts');
    expect(Object.keys(root).length).toBeLessThanOrEqual(15);
    expect(Object.keys(root).sort()).toEqual(['TollgateError', 'createTollgate', 'fromIoredis', 'fromNodeRedis', 'isTollgateError']);
  });

  it('is named tollgate, side-effect free, for Node >= 22, shipping only dist and the README (the CHANGELOG stays in the repository)', () => {
    expect(manifest).toMatchObject({ name: 'tollgate', type: 'module', sideEffects: false, engines: { node: '>=22' }, files: ['dist', 'README.md'] });
  });

  it('names its repository, home page, issue tracker, licence and keywords', () => {
    expect(manifest.repository).toEqual({ type: 'git', url: 'git+https://github.com/tollgate-dev/tollgate.git' });
    expect(manifest.homepage).toBe('https://github.com/tollgate-dev/tollgate#readme');
    expect(manifest.bugs).toEqual({ url: 'https://github.com/tollgate-dev/tollgate/issues' });
    expect(manifest.license).toBe('MIT');
    expect(existsSync(join(root, 'LICENSE'))).toBe(true);
    expect(manifest.keywords).toEqual(expect.arrayContaining(['rate-limit', 'credits', 'redis']));
  });

  it('maps import and require of every subpath to the ESM and CommonJS files, with types for each, and node10 to the same types', () => {
    for (const [subpath, file] of Object.entries(SUBPATHS)) {
      expect(manifest.exports[subpath], subpath).toEqual({
        // The repository's own examples and tests import the package by name from the source
        // tree, without a build; this condition is first so that it wins where it is asked for.
        'tollgate-source': `./src/${file}.ts`,
        import: { types: `./dist/${file}.d.ts`, default: `./dist/${file}.js` },
        require: { types: `./dist/${file}.d.cts`, default: `./dist/${file}.cjs` },
      });
      expect(Object.keys(manifest.exports[subpath])[0], subpath).toBe('tollgate-source');
      expect(existsSync(join(root, 'src', `${file}.ts`)), subpath).toBe(true);
      if (subpath !== '.') expect(manifest.typesVersions['*'][subpath.slice(2)], subpath).toEqual([`./dist/${file}.d.cts`]);
    }
    expect(manifest).toMatchObject({ main: './dist/index.cjs', types: './dist/index.d.cts' });
  });

  it('has the operator CLI as its `tollgate` bin', () => {
    expect(manifest.bin).toEqual({ tollgate: './dist/cli.cjs' });
  });

  it('takes node-redis, ioredis, @opentelemetry/api, Fastify and Hono as optional peers in closed ranges, and has no dependencies', () => {
    expect(Object.keys(manifest.peerDependencies).sort()).toEqual(['@opentelemetry/api', 'fastify', 'hono', 'ioredis', 'redis']);
    for (const [peer, range] of Object.entries(manifest.peerDependencies)) {
      expect(manifest.peerDependenciesMeta[peer], peer).toEqual({ optional: true });
      expect(range, peer).toMatch(/^>=\S+ <\S+$/);
    }
    expect(manifest.dependencies ?? {}).toEqual({});
  });

  it('locks every optional dependency of every locked package, so plain `npm ci` works on any platform (Linux x64 and arm64, macOS)', () => {
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { optionalDependencies?: Record<string, string> }>;
    };
    // npm resolves a dependency in the nearest node_modules up the tree, as the lock records it.
    const resolves = (from: string, name: string): boolean => {
      for (let base = from; ; base = base.includes('/node_modules/') ? base.slice(0, base.lastIndexOf('/node_modules/')) : '') {
        if (lock.packages[`${base ? `${base}/` : ''}node_modules/${name}`]) return true;
        if (base === '') return false;
      }
    };
    const missing = Object.entries(lock.packages).flatMap(([path, entry]) =>
      Object.keys(entry.optionalDependencies ?? {})
        .filter((name) => !resolves(path, name))
        .map((name) => `${path || '(root)'} -> ${name}`),
    );
    expect(missing).toEqual([]);
    for (const native of [
      '@rollup/rollup-darwin-arm64',
      '@rollup/rollup-linux-arm64-gnu',
      '@rollup/rollup-linux-x64-gnu',
      '@esbuild/darwin-arm64',
      '@esbuild/linux-arm64',
      '@esbuild/linux-x64',
    ]) {
      expect(
        Object.keys(lock.packages).some((path) => path.endsWith(`node_modules/${native}`)),
        native,
      ).toBe(true);
    }
  });
});

describe('the declarations trim (tsup.config.ts)', () => {
  it('puts a summary on one line of at most 120 characters, cut at a word with an ellipsis', () => {
    const long = `Adds ${'credits '.repeat(20)}beside the cycle's allowance.`;
    const trimmed = trimComments(`    /**\n     * ${long.slice(0, 60)}\n     * ${long.slice(60)}\n     */\n    a: number;\n`);
    const line = trimmed.split('\n')[0]!;
    expect(line).toMatch(/^ {4}\/\*\* Adds (credits )+credits… \*\/$/);
    expect(line.length - '    /**  */'.length).toBeLessThanOrEqual(120);
    expect(trimComments('    /**\n     * Short, on two\n     * lines.\n     */\n    b: number;\n')).toBe('    /** Short, on two lines. */\n    b: number;\n');
  });

  it('keeps the first sentence (the text before a code block), and @deprecated; drops the rest, @example and @module comments', () => {
    const before = [
      '/**',
      ' * @module tollgate/x',
      ' */',
      '',
      'declare class A {',
      '    /**',
      '     * Opens a hold:',
      '     * ```ts',
      '     * const a = 1;',
      '     *',
      '     * const b = 2;',
      '     * ```',
      '     * and says so.',
      '     *',
      '     * More, in a second paragraph.',
      '     * @deprecated Read `b`;',
      '     *   `a` stays until 1.0.',
      '     * @example',
      '     * ```ts',
      '     * @notATag();',
      '     * ```',
      '     */',
      '    a: number;',
      '    /**',
      '     * One line.',
      '     *',
      '     * @example',
      '     * x',
      '     */',
      '    b: number;',
      '}',
      '',
    ].join('\n');
    expect(trimComments(before)).toBe(
      [
        'declare class A {',
        '    /**',
        '     * Opens a hold:',
        '     * @deprecated Read `b`;',
        '     *   `a` stays until 1.0.',
        '     */',
        '    a: number;',
        '    /** One line. */',
        '    b: number;',
        '}',
        '',
      ].join('\n'),
    );
  });
});

/** A tool of the repository's node_modules, or undefined when it is not installed. */
function tool(path: string): string | undefined {
  const file = join(modules, path);
  return existsSync(file) ? file : undefined;
}
const publint = tool('publint/src/cli.js');
const attw = tool('@arethetypeswrong/cli/dist/index.js');
const tsc = tool('typescript/bin/tsc');

describe('packed package', () => {
  let dir: string;
  let tarball: string;
  let packed: { size: number; files: Array<{ path: string; size: number }> };
  const env = () => ({ ...process.env, REDIS_URL: `${redisUrl().replace(/\/\d*$/, '')}/5` });
  const quickstart = readFileSync(join(root, 'examples', 'quickstart.ts'), 'utf8');

  beforeAll(async () => {
    // `npm run build` without its build:lua (test/scripts.test.ts checks that output is fresh):
    // tsup, then tsup.config.ts trims the declarations' comments.
    await run(process.execPath, [join(modules, 'tsup', 'dist', 'cli-default.js')], { cwd: root });
    await run(process.execPath, [...TRIM_STEP.split(' ').slice(1)], { cwd: root });
    dir = mkdtempSync(join(tmpdir(), 'tollgate-pkg-'));
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: root });
    [packed] = JSON.parse(stdout);
    tarball = join(dir, (packed as unknown as { filename: string }).filename);
    // An empty project with the tarball installed, the clients and Node's types beside it, and
    // neither Express nor Koa nor @opentelemetry/api; Fastify and Hono (which ship their own
    // types) for the type checks only.
    const installed = join(dir, 'node_modules', 'tollgate');
    mkdirSync(installed, { recursive: true });
    await run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
    // @types holds Express's and Koa's types: what a TypeScript user of those subpaths has.
    for (const dep of ['redis', '@redis', 'ioredis', '@types', 'fastify', 'hono']) symlinkSync(join(modules, dep), join(dir, 'node_modules', dep));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  }, 120_000);
  afterAll(() => dir && rmSync(dir, { recursive: true, force: true }));

  it(`is at most ${MAX_PACKED_BYTES / 1000} KB packed, minified without sourcemaps, with each script's Lua once`, () => {
    expect(packed.size).toBeLessThanOrEqual(MAX_PACKED_BYTES);
    expect(packed.files.filter((f) => f.path.endsWith('.map'))).toEqual([]);
    const shipped = packed.files
      .filter((f) => f.path.startsWith('dist/') && /\.c?js$/.test(f.path))
      .map((f) => readFileSync(join(dir, 'node_modules', 'tollgate', f.path), 'utf8'));
    for (const script of Object.values(scripts).filter((s): s is typeof s & { sha1: string; name: string } => 'sha1' in s)) {
      const copies = shipped.reduce((n, text) => n + (text.match(new RegExp(`"${script.sha1}"`, 'g'))?.length ?? 0), 0);
      expect(copies, script.name).toBe(1);
    }
    // Minified by esbuild, made CommonJS by rollup (tsup.config.ts): no helpers lowering ?. and ??
    // (sucrase's, 20 KB unpacked), and no source names kept (keepNames off: the errors name themselves).
    expect(shipped.filter((text) => /_optionalChain|_nullishCoalesce/.test(text))).toEqual([]);
    expect(shipped.some((text) => text.includes('"validateWindows"'))).toBe(false);
  });

  it("ships no declaration comment that documents nothing: a file's opening comment is a // comment, the entries' @module comments stay in src/", () => {
    const loose = packed.files
      .filter((f) => f.path.endsWith('.d.cts'))
      .flatMap((f) =>
        [...readFileSync(join(dir, 'node_modules', 'tollgate', f.path), 'utf8').matchAll(/\/\*\*(?:(?!\*\/)[\s\S])*\*\/\n\n/g)].map(
          (m) => `${f.path}: ${m[0].split('\n')[1] ?? m[0]}`,
        ),
      );
    expect(loose).toEqual([]);
  });

  it('ships each public declaration with the first sentence of its comment in src/, its @deprecated kept, and no @example', () => {
    expect(manifest.scripts.build).toMatch(new RegExp(`&& tsup && ${TRIM_STEP}$`));
    // The model's declarations carry no comments of their own (tsup.config.ts); the other entries' summaries are checked.
    const entries = Object.values(SUBPATHS).filter((file) => file !== 'model/index');
    const source = publicDocs(entries.map((file) => join(root, 'src', `${file}.ts`)));
    const shipped = publicDocs(entries.map((file) => join(dir, 'node_modules', 'tollgate', 'dist', `${file}.d.cts`)));
    // The calls a host makes first, and createTollgate's options, among them.
    for (const name of ['.: createTollgate', '.: CreditsApi.charge', '.: CreditsApi.grant', '.: TollgateOptions.redis', '.: TollgateOptions.operationTtlMs'])
      expect(shipped.get(name)?.text, name).toMatch(/\w/);
    expect(source.get('.: CreditsApi.charge')?.tags).toContain('example');
    expect(shipped.get('.: CreditsApi.charge')?.tags).toEqual([]);
    const wrong: string[] = [];
    for (const [name, doc] of source) {
      const want = { text: firstParagraph(doc.text), deprecated: doc.deprecated };
      const got = shipped.get(name);
      if (!got || got.text !== want.text || got.deprecated !== want.deprecated) wrong.push(`${name}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
    }
    expect(source.size).toBeGreaterThan(300);
    expect(wrong).toEqual([]);
    expect([...source.values()].filter((doc) => doc.deprecated !== undefined).length).toBeGreaterThanOrEqual(10);
    const examples = packed.files
      .filter((f) => f.path.endsWith('.d.cts'))
      .filter((f) => readFileSync(join(dir, 'node_modules', 'tollgate', f.path), 'utf8').includes('@example'));
    expect(examples).toEqual([]);
  });

  it('gives every error class, minified, instances with its own `name` and a `code`, under import and require', async () => {
    // Each class is built with the same placeholder arguments; its instance names itself.
    const check = (errors: string) => `const e = ${errors}; const out = {};
      for (const [n, C] of Object.entries(e)) if (typeof C === 'function' && C.prototype instanceof Error) {
        const x = new C('x', ['x'], 'x');
        out[n] = [x.name, typeof x.code, x instanceof e.TollgateError, x instanceof C, e.isTollgateError(x)];
      }
      console.log(JSON.stringify(out));`;
    for (const [flag, code] of [
      ['--input-type=module', check(`await import('tollgate/errors')`)],
      ['--input-type=commonjs', `(async () => { ${check(`require('tollgate/errors')`)} })();`],
    ] as const) {
      const { stdout } = await run(process.execPath, [flag, '-e', code], { cwd: dir });
      const classes = JSON.parse(stdout) as Record<string, unknown[]>;
      expect(Object.keys(classes), flag).toContain('StoreUnavailableError');
      expect(Object.keys(classes).length, flag).toBeGreaterThanOrEqual(11);
      for (const [name, seen] of Object.entries(classes)) expect(seen, `${flag} ${name}`).toEqual([name, 'string', true, true, true]);
    }
  });

  it.skipIf(!publint)('publint --strict finds nothing (skipped only when publint is not installed)', async () => {
    const { stdout } = await run(process.execPath, [publint!, 'run', tarball, '--strict']);
    expect(stdout).toContain('All good!');
  });

  it.skipIf(!attw)(
    'attw finds no problem for any subpath under node10, node16 (CJS and ESM) and bundler (skipped only when attw is not installed)',
    async () => {
      const { stdout } = await run(process.execPath, [attw!, tarball, '--format', 'json'], { maxBuffer: 64 * 1024 * 1024 }).catch(
        (error: { stdout: string }) => error,
      );
      const { analysis, problems } = JSON.parse(stdout);
      expect(problems ?? {}).toEqual({});
      expect(Object.keys(analysis.entrypoints).sort()).toEqual([
        '.',
        './errors',
        './express',
        './fastify',
        './hono',
        './http',
        './koa',
        './model',
        './package.json',
      ]);
      for (const [subpath, entry] of Object.entries(
        analysis.entrypoints as Record<string, { resolutions: Record<string, { resolution?: { isTypeScript: boolean } }> }>,
      )) {
        if (subpath === './package.json') continue;
        for (const mode of ['node10', 'node16-cjs', 'node16-esm', 'bundler'])
          expect(entry.resolutions[mode]?.resolution?.isTypeScript, `${subpath} ${mode}`).toBe(true);
      }
    },
  );

  it('runs the README quick start as written through import (ESM)', async () => {
    // The quick start is plain JavaScript apart from its file name.
    writeFileSync(join(dir, 'quickstart.mjs'), quickstart);
    const { stdout } = await run(process.execPath, ['quickstart.mjs'], { cwd: dir, env: env() });
    expect(oneLine(stdout)).toBe(quickStartPrints());
  });

  it('runs the README quick start through require (CommonJS)', async () => {
    writeFileSync(join(dir, 'quickstart.cjs'), toCommonJs(quickstart));
    const { stdout } = await run(process.execPath, ['quickstart.cjs'], { cwd: dir, env: env() });
    expect(oneLine(stdout)).toBe(quickStartPrints());
  });

  it.skipIf(!tsc).each(['nodenext', 'bundler'])(
    'type-checks the README quick start as TypeScript with %s resolution, against every subpath, and runs it',
    async (resolution) => {
      const project = join(dir, resolution);
      mkdirSync(project, { recursive: true });
      writeFileSync(join(project, 'quickstart.ts'), quickstart);
      // Every subpath's declarations, read by the compiler with skipLibCheck off.
      writeFileSync(
        join(project, 'subpaths.ts'),
        `import type { Tollgate } from "tollgate";\nimport type { UnconfirmedError } from "tollgate/errors";\nimport type { HttpReply } from "tollgate/http";\nimport type { TollgateModel } from "tollgate/model";\nimport type { ExpressRateLimitOptions } from "tollgate/express";\nimport type { KoaRateLimitOptions } from "tollgate/koa";\nimport type { FastifyRateLimitOptions } from "tollgate/fastify";\nimport type { HonoRateLimitOptions } from "tollgate/hono";\nexport type All = [Tollgate, UnconfirmedError, HttpReply, TollgateModel, ExpressRateLimitOptions, KoaRateLimitOptions, FastifyRateLimitOptions, HonoRateLimitOptions];\n`,
      );
      // nodenext also reads the declarations themselves (skipLibCheck off); they are the same
      // files under bundler, which is left the quicker check.
      const options =
        resolution === 'nodenext'
          ? { module: 'nodenext', moduleResolution: 'nodenext', skipLibCheck: false }
          : { module: 'preserve', moduleResolution: 'bundler', skipLibCheck: true };
      writeFileSync(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { ...options, target: 'es2022', strict: true, noEmit: true, types: ['node'] },
          files: ['quickstart.ts', 'subpaths.ts'],
        }),
      );
      const { stdout: errors } = await run(process.execPath, [tsc!, '-p', project]).catch((error: { stdout: string }) => error);
      // Errors inside other packages' declarations (@types/koa has one of its own) are theirs.
      const ours = errors
        .split('\n')
        .filter((line) => /^(quickstart\.ts|subpaths\.ts|\S*node_modules\/tollgate\/)/.test(line.replace(/^\S*\/(nodenext|bundler)\//, '')));
      expect(ours, `tsc (${resolution}):\n${errors}`).toEqual([]);
      const { stdout } = await run(process.execPath, ['--experimental-strip-types', '--disable-warning=ExperimentalWarning', join(project, 'quickstart.ts')], {
        cwd: dir,
        env: env(),
      });
      expect(oneLine(stdout)).toBe(quickStartPrints());
    },
    60_000,
  );

  it('loads every subpath by import and by require with neither Express, Koa nor OpenTelemetry installed, and Fastify and Hono never loaded', async () => {
    const names =
      'typeof t.createTollgate, typeof r.UnconfirmedError, typeof p.checkRequest, typeof m.TollgateModel, typeof e.rateLimit, typeof k.rateLimit, typeof f.rateLimit, typeof h.rateLimit';
    const loaded = `Object.keys(require.cache).filter((file) => /node_modules.(fastify|hono)./.test(file)).length`;
    const esm = `import { createRequire } from 'node:module'; const require = createRequire(import.meta.url); import * as t from 'tollgate'; import * as r from 'tollgate/errors'; import * as p from 'tollgate/http'; import * as m from 'tollgate/model'; import * as e from 'tollgate/express'; import * as k from 'tollgate/koa'; import * as f from 'tollgate/fastify'; import * as h from 'tollgate/hono'; console.log(${names}, ${loaded});`;
    const cjs = `const t = require('tollgate'), r = require('tollgate/errors'), p = require('tollgate/http'), m = require('tollgate/model'), e = require('tollgate/express'), k = require('tollgate/koa'), f = require('tollgate/fastify'), h = require('tollgate/hono'); console.log(${names}, ${loaded});`;
    for (const [flag, code] of [
      ['--input-type=module', esm],
      ['--input-type=commonjs', cjs],
    ] as const) {
      const { stdout } = await run(process.execPath, [flag, '-e', code], { cwd: dir });
      expect(stdout.trim(), flag).toBe('function function function function function function function function 0');
    }
    expect(readdirSync(join(dir, 'node_modules'))).not.toContain('express');
  });

  it('runs the `tollgate` bin from the tarball: --help, and a command on REDIS_URL', async () => {
    const bin = join(dir, 'node_modules', 'tollgate', 'dist', 'cli.cjs');
    const help = await run(process.execPath, [bin, '--help'], { cwd: dir });
    expect(help.stdout).toContain('Usage: tollgate <command>');
    const { stdout } = await run(process.execPath, [bin, 'accounts', 'list', '--prefix', 'nothing-here', '--json'], { cwd: dir, env: env() });
    expect(JSON.parse(stdout)).toEqual([]);
  });

  it("is one copy for import and require, and for every subpath: an error of one is an instance of the other's class", async () => {
    const code = `import { createRequire } from 'node:module'; import * as t from 'tollgate'; import * as r from 'tollgate/errors'; const require = createRequire(import.meta.url); const c = require('tollgate'), ce = require('tollgate/errors');
      try { t.createTollgate({}); } catch (e) { console.log(e instanceof ce.InvalidInputError, e instanceof r.InvalidInputError, e instanceof c.TollgateError, r.TollgateError === t.TollgateError); }`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], { cwd: dir });
    expect(stdout.trim()).toBe('true true true true');
  });

  it('exports at most 15 values from the root: what an embedding server needs', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--input-type=module', '-e', `import * as t from 'tollgate'; console.log(JSON.stringify(Object.keys(t).sort()));`],
      { cwd: dir },
    );
    const names = JSON.parse(stdout) as string[];
    expect(names.length).toBeLessThanOrEqual(15);
    expect(names).toEqual(expect.arrayContaining(['createTollgate', 'fromIoredis', 'fromNodeRedis', 'isTollgateError', 'TollgateError']));
  });
});

/** The same code for require: imports become requires, top-level await an async function. */
function toCommonJs(source: string): string {
  const body = source.replace(/^import \{([^}]+)\} from ("[^"]+");$/gm, (_m, names: string, from: string) => `const {${names}} = require(${from});`);
  return `(async () => {\n${body}\n})().catch((error) => { console.error(error); process.exit(1); });\n`;
}

/**
 * "subpath: Name" and "subpath: Name.member" of every export of the subpaths' entry files (src/
 * or the shipped .d.cts) and of the members of their classes and interfaces, with the comment's
 * text as TypeScript reads it and its @deprecated text; those without a comment left out.
 */
function publicDocs(entries: string[]): Map<string, { text: string; deprecated: string | undefined; tags: string[] }> {
  const built = ts.createProgram(entries, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
    noEmit: true,
    stripInternal: true,
  });
  const checker = built.getTypeChecker();
  const docs = new Map<string, { text: string; deprecated: string | undefined; tags: string[] }>();
  const record = (name: string, symbol: ts.Symbol) => {
    const text = ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim();
    const tags = symbol.getJsDocTags(checker);
    const deprecated = tags.find((t) => t.name === 'deprecated');
    if (text !== '') docs.set(name, { text, deprecated: deprecated && ts.displayPartsToString(deprecated.text).trim(), tags: tags.map((t) => t.name) });
  };
  const subpaths = Object.entries(SUBPATHS)
    .filter(([, file]) => entries.some((entry) => entry.includes(`${file}.`)))
    .map(([subpath]) => subpath);
  subpaths.forEach((subpath, i) => {
    const file = built.getSourceFile(entries[i]!)!;
    for (const exported of checker.getExportsOfModule(checker.getSymbolAtLocation(file)!)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      record(`${subpath}: ${exported.name}`, symbol);
      if (!(symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface))) continue;
      symbol.members?.forEach((member, key) => {
        const hidden = (member.declarations ?? []).some(
          (d) => ts.getCombinedModifierFlags(d) & ts.ModifierFlags.Private || ts.getJSDocTags(d).some((t) => t.tagName.text === 'internal'),
        );
        if (!hidden && key !== '__constructor') record(`${subpath}: ${exported.name}.${String(key)}`, member);
      });
    }
  });
  return docs;
}

/** A comment's summary as shipped: its first paragraph (up to a blank line outside a code block), cut to its first sentence. */
function firstParagraph(text: string): string {
  let fenced = false;
  const lines: string[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' && !fenced) break;
    if (/^\s*```/.test(line)) fenced = !fenced;
    lines.push(line);
  }
  const sentence = firstSentenceOf(lines.join('\n').trim());
  if (/```/.test(sentence)) return sentence;
  // One line of at most 120 characters, cut at a word with an ellipsis.
  const line = sentence
    .split('\n')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .join(' ');
  if (line.length <= 120) return line;
  const cut = line.slice(0, 119);
  return `${cut.slice(0, Math.max(cut.lastIndexOf(' '), 1))}…`;
}

/** The first sentence of a paragraph: up to a full stop, ! or ? before a space or the end, outside `code`, not after e.g./i.e./etc./vs./approx. */
function firstSentenceOf(text: string): string {
  const fence = text.search(/^\s*```/m);
  let code = false;
  for (let i = 0; i < text.length; i++) {
    if (fence >= 0 && i >= fence) return fence > 0 ? text.slice(0, fence).trim() : text;
    const ch = text[i]!;
    if (ch === '`') code = !code;
    else if (!code && '.!?'.includes(ch) && (i + 1 === text.length || /\s/.test(text[i + 1]!)) && !/\b(?:e\.g|i\.e|etc|vs|approx)$/.test(text.slice(0, i)))
      return text.slice(0, i + 1);
  }
  return text;
}
