// The documentation: every public export of every subpath has a JSDoc comment, and so does
// every public member of the classes and interfaces among them; `npm run docs` (TypeDoc,
// typedoc.json) builds the reference without a warning (broken {@link}s, public types that
// name a type nobody can import); and docs/ names every error code, every error class, every
// refusal reason of the public types and every script result code (docs/errors.md).
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../src/rules/events.ts';

const root = join(import.meta.dirname, '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const typedocConfig = JSON.parse(readFileSync(join(root, 'typedoc.json'), 'utf8'));

/** The source entry of each subpath the package exports. */
const ENTRIES: Record<string, string> = {
  '.': 'src/index.ts',
  './errors': 'src/errors.ts',
  './http': 'src/http.ts',
  './model': 'src/model/index.ts',
  './express': 'src/express.ts',
  './koa': 'src/koa.ts',
  './fastify': 'src/fastify.ts',
  './hono': 'src/hono.ts',
};

function program(): { checker: ts.TypeChecker; files: Map<string, ts.SourceFile> } {
  const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.build.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
  const built = ts.createProgram(
    Object.values(ENTRIES).map((file) => join(root, file)),
    config.options,
  );
  const files = new Map(Object.entries(ENTRIES).map(([subpath, file]) => [subpath, built.getSourceFile(join(root, file))!]));
  return { checker: built.getTypeChecker(), files };
}

function isDocumented(symbol: ts.Symbol, checker: ts.TypeChecker): boolean {
  if (symbol.getDocumentationComment(checker).some((part) => part.text.trim() !== '')) return true;
  // An overload documented on any of its signatures, or a comment that is only tags (@example).
  return (symbol.declarations ?? []).some((d) => ts.getJSDocCommentsAndTags(d).length > 0);
}

function isHidden(declaration: ts.Declaration): boolean {
  const flags = ts.getCombinedModifierFlags(declaration);
  if (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) return true;
  if (ts.isConstructorDeclaration(declaration)) return true;
  const name = (declaration as unknown as { name?: ts.Node }).name;
  if (name && ts.isPrivateIdentifier(name)) return true;
  return ts.getJSDocTags(declaration).some((tag) => tag.tagName.text === 'internal');
}

/** An `override` member says what its base does; the base carries the comment. */
function isOverride(declaration: ts.Declaration): boolean {
  return (ts.getCombinedModifierFlags(declaration) & ts.ModifierFlags.Override) !== 0;
}

/** "subpath: Name" and "subpath: Name.member" for every public declaration without a comment. */
function undocumented(): string[] {
  const { checker, files } = program();
  const missing = new Set<string>();
  for (const [subpath, file] of files) {
    for (const exported of checker.getExportsOfModule(checker.getSymbolAtLocation(file)!)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const name = `${subpath}: ${exported.name}`;
      if (!isDocumented(symbol, checker)) missing.add(name);
      if (!(symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface))) continue;
      symbol.members?.forEach((member, key) => {
        const declarations = member.declarations ?? [];
        if (member.flags & ts.SymbolFlags.TypeParameter) return;
        if (key === '__constructor' || declarations.length === 0 || declarations.some(isHidden) || declarations.some(isOverride)) return;
        if (!isDocumented(member, checker)) missing.add(`${name}.${String(key)}`);
      });
    }
  }
  return [...missing].sort();
}

describe('API reference', () => {
  it('covers every subpath the package exports', () => {
    expect(Object.keys(ENTRIES).sort()).toEqual(
      Object.keys(manifest.exports)
        .filter((p) => p !== './package.json')
        .sort(),
    );
    expect(typedocConfig.entryPoints.sort()).toEqual(Object.values(ENTRIES).sort());
  });

  it('has a JSDoc comment on every public export of every subpath and on their public members', () => {
    expect(undocumented()).toEqual([]);
  });

  it('gives an example for the calls a host makes first', () => {
    const { checker, files } = program();
    const exampleOf = (subpath: string, path: string[]): boolean => {
      let symbol: ts.Symbol | undefined = checker.getExportsOfModule(checker.getSymbolAtLocation(files.get(subpath)!)!).find((s) => s.name === path[0]);
      if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
      for (const name of path.slice(1)) symbol = symbol?.members?.get(name as ts.__String);
      return (symbol?.declarations ?? []).some((d) => ts.getJSDocTags(d).some((tag) => tag.tagName.text === 'example'));
    };
    const wanted: Array<[string, string[]]> = [
      ['.', ['createTollgate']],
      ['.', ['Limits', 'admit']],
      ['.', ['Keys', 'verify']],
      ['.', ['CreditsApi', 'charge']],
      ['.', ['Holds', 'open']],
      ['.', ['Holds', 'settle']],
      ['.', ['TollgateOptions', 'telemetry']],
      ['./http', ['checkRequest']],
      ['./express', ['rateLimit']],
      ['./koa', ['rateLimit']],
      ['./fastify', ['rateLimit']],
      ['./hono', ['rateLimit']],
    ];
    expect(wanted.filter(([subpath, path]) => !exampleOf(subpath, path)).map(([s, p]) => `${s}: ${p.join('.')}`)).toEqual([]);
  });

  it('builds with TypeDoc (`npm run docs`) without a warning', async () => {
    const cli = join(root, 'node_modules', 'typedoc', 'bin', 'typedoc');
    expect(existsSync(cli), 'typedoc is a dev dependency: npm install').toBe(true);
    expect(manifest.scripts.docs).toBe('typedoc');
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [cli, '--emit', 'none', '--treatWarningsAsErrors'], {
      cwd: root,
      env: { ...process.env, NO_COLOR: '1' },
    });
    expect(`${stdout}${stderr}`).not.toMatch(/\[(warning|error)\]/);
  }, 60_000);
});

/** Every docs/*.md file's text, joined. */
function docsText(): string {
  const dir = join(root, 'docs');
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md'))
    .map((file) => readFileSync(join(dir, file), 'utf8'))
    .join('\n');
}

/** The string literals of a type: a literal, or a union (or alias of one) of literals. */
function literalsOf(type: ts.Type): string[] {
  if (type.isStringLiteral()) return [type.value];
  if (type.isUnion()) return type.types.flatMap(literalsOf);
  return [];
}

/**
 * Every string literal a property named `reason` (or `code`) can hold, anywhere in the types the
 * package exports: the outcomes' refusal reasons, the key refusals, the error codes. Walks
 * each export's type through unions, properties, call signatures and Promise results.
 */
function publicReasons(): Map<string, string> {
  const { checker, files } = program();
  const found = new Map<string, string>();
  const seen = new Set<ts.Type>();
  const visit = (type: ts.Type, where: string, depth: number): void => {
    if (depth > 8 || seen.has(type)) return;
    seen.add(type);
    if (type.isUnion() || type.isIntersection()) {
      for (const member of type.types) visit(member, where, depth + 1);
      return;
    }
    for (const signature of [...type.getCallSignatures(), ...type.getConstructSignatures()]) {
      visit(signature.getReturnType(), where, depth + 1);
      for (const parameter of signature.getParameters()) {
        const declaration = parameter.valueDeclaration ?? parameter.declarations?.[0];
        if (declaration) visit(checker.getTypeOfSymbolAtLocation(parameter, declaration), where, depth + 1);
      }
    }
    for (const argument of checker.getTypeArguments(type as ts.TypeReference) ?? []) visit(argument, where, depth + 1);
    if (!(type.flags & ts.TypeFlags.Object)) return;
    for (const property of type.getProperties()) {
      const declaration = property.valueDeclaration ?? property.declarations?.[0];
      if (!declaration || (property.declarations ?? []).some(isHidden)) continue;
      const propertyType = checker.getTypeOfSymbolAtLocation(property, declaration);
      if (property.name === 'reason' || property.name === 'code') {
        for (const literal of literalsOf(propertyType)) if (!found.has(literal)) found.set(literal, `${where}.${property.name}`);
      }
      visit(propertyType, `${where}.${property.name}`, depth + 1);
    }
  };
  for (const [subpath, file] of files) {
    for (const exported of checker.getExportsOfModule(checker.getSymbolAtLocation(file)!)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const where = `${subpath}: ${exported.name}`;
      // A type alias that is itself a union of literals (KeyRefusal, TollgateErrorCode).
      if (symbol.flags & ts.SymbolFlags.TypeAlias && /(Reason|Refusal|Code)$/.test(exported.name)) {
        for (const literal of literalsOf(checker.getDeclaredTypeOfSymbol(symbol))) if (!found.has(literal)) found.set(literal, where);
      }
      if (symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Class)) visit(checker.getDeclaredTypeOfSymbol(symbol), where, 0);
      if (symbol.flags & (ts.SymbolFlags.Function | ts.SymbolFlags.Class | ts.SymbolFlags.Variable)) {
        const declaration = symbol.valueDeclaration ?? symbol.declarations?.[0];
        if (declaration) visit(checker.getTypeOfSymbolAtLocation(symbol, declaration), where, 0);
      }
    }
  }
  return found;
}

/** The error classes the package exports, from any subpath: TollgateError and every class built on it. */
function errorClasses(): string[] {
  const { checker, files } = program();
  const names = new Set<string>();
  const isError = (type: ts.Type): boolean =>
    type.getSymbol()?.getName() === 'TollgateError' || (type.isClassOrInterface() && checker.getBaseTypes(type).some(isError));
  for (const file of files.values()) {
    for (const exported of checker.getExportsOfModule(checker.getSymbolAtLocation(file)!)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      if (symbol.flags & ts.SymbolFlags.Class && isError(checker.getDeclaredTypeOfSymbol(symbol))) names.add(exported.name);
    }
  }
  return [...names];
}

/** The error types of every ERROR_STATUS table in src/ and examples/ (the HTTP error bodies' `type`). */
function errorTypes(): string[] {
  const types: string[] = [];
  for (const dir of ['src', 'examples']) {
    for (const file of readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })) {
      if (!file.endsWith('.ts')) continue;
      const text = readFileSync(join(root, dir, file), 'utf8');
      const table = /\bERROR_STATUS\s*(?::[^=]*)?=\s*\{([^}]*)\}/.exec(text);
      if (table) types.push(...[...table[1]!.matchAll(/^\s*([a-z_]+):\s*\d{3}\b/gm)].map((m) => m[1]!));
    }
  }
  return types;
}

/** The result codes of lua/lib/codes.lua, by name, as the scripts return them. */
function luaCodes(): string[] {
  const lua = readFileSync(join(root, 'lua', 'lib', 'codes.lua'), 'utf8');
  return [...lua.matchAll(/^\s*([A-Z][A-Z0-9_]*)\s*=\s*\d+\s*,?\s*$/gm)].map((m) => m[1]!);
}

describe('docs/', () => {
  const text = docsText();
  const documented = (word: string) => text.includes(`\`${word}\``);
  /** The names docs/ does not mention, once the list is shown to hold one it must (the walk found them). */
  const undocumentedOf = (names: string[], sample: string) => {
    expect(names).toContain(sample);
    return names.filter((name) => !documented(name));
  };

  it('has an index that links every page', () => {
    const index = readFileSync(join(root, 'docs', 'README.md'), 'utf8');
    const pages = readdirSync(join(root, 'docs')).filter((file) => file.endsWith('.md') && file !== 'README.md');
    expect(pages.filter((page) => !index.includes(`](${page})`))).toEqual([]);
  });

  it('names every error class the package exports', () => {
    expect(undocumentedOf(errorClasses(), 'StoreUnavailableError')).toEqual([]);
  });

  it('names every error code and every refusal reason of the public types', () => {
    const reasons = publicReasons();
    // The walk reaches the outcomes it must: a denial, a charge, a hold, a settlement, a key, an error.
    for (const known of ['rate_limited', 'insufficient', 'hold_limit_reached', 'lease_expired', 'malformed', 'unavailable'])
      expect(reasons.has(known), known).toBe(true);
    expect([...reasons].filter(([reason]) => !documented(reason)).map(([reason, where]) => `${reason} (${where})`)).toEqual([]);
  });

  it('lists every event type in docs/events.md, with its data', () => {
    const page = readFileSync(join(root, 'docs', 'events.md'), 'utf8');
    expect(EVENT_TYPES.length).toBeGreaterThan(8);
    expect(EVENT_TYPES.filter((type) => !page.includes(`| \`${type}\` |`))).toEqual([]);
  });

  it('names every HTTP error type of ERROR_STATUS', () => {
    expect(undocumentedOf(errorTypes(), 'rate_limited')).toEqual([]);
  });

  it('names every script result code, and the outcome telemetry reports for it', () => {
    const codes = luaCodes();
    expect(undocumentedOf(codes, 'OK')).toEqual([]);
    expect(codes.map((code) => code.toLowerCase()).filter((outcome) => !documented(outcome))).toEqual([]);
  });

  it('names every option of createTollgate and every script of lua/', () => {
    const { checker, files } = program();
    const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(files.get('.')!)!).find((s) => s.name === 'TollgateOptions')!;
    const options = checker
      .getDeclaredTypeOfSymbol(checker.getAliasedSymbol(exported))
      .getProperties()
      .map((p) => p.name);
    expect(options).toContain('redis');
    expect(options.filter((option) => !documented(option))).toEqual([]);
    const scripts = readdirSync(join(root, 'lua'))
      .filter((file) => file.endsWith('.lua'))
      .map((file) => file.slice(0, -4));
    const page = readFileSync(join(root, 'docs', 'scripts.md'), 'utf8');
    expect(scripts.filter((script) => !page.includes(`\`${script}\``))).toEqual([]);
  });

  it('cites only docs pages and anchors that exist', () => {
    const dir = join(root, 'docs');
    const anchors = new Map<string, Set<string>>();
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.md'))) {
      const headings = [...readFileSync(join(dir, file), 'utf8').matchAll(/^#+\s+(.+)$/gm)].map((m) => slug(m[1]!));
      anchors.set(file, new Set(headings));
    }
    const broken: string[] = [];
    for (const [file] of anchors) {
      for (const link of readFileSync(join(dir, file), 'utf8').matchAll(/\]\(([a-z-]+\.md)(?:#([a-z0-9-]+))?\)/g)) {
        const [, page, anchor] = link;
        if (!anchors.has(page!) || (anchor && !anchors.get(page!)!.has(anchor))) broken.push(`${file}: ${link[1]}${anchor ? `#${anchor}` : ''}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

/** Every file under the repository's source folders that a comment may cite from. */
function sourceFiles(): string[] {
  const out: string[] = [];
  for (const dir of ['src', 'lua', 'examples', 'test', 'bench']) {
    for (const file of readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })) {
      if (/node_modules|results\//.test(file) || !/\.(ts|lua|md|mjs)$/.test(file)) continue;
      out.push(join(dir, file));
    }
  }
  return out;
}

describe('citations in the code', () => {
  it('name docs/ pages and anchors that exist', () => {
    const dir = join(root, 'docs');
    const broken: string[] = [];
    for (const file of sourceFiles()) {
      for (const m of readFileSync(join(root, file), 'utf8').matchAll(/\bdocs\/([a-z-]+\.md)(?:#([a-z0-9-]+))?/g)) {
        const [, page, anchor] = m;
        const path = join(dir, page!);
        if (!existsSync(path)) {
          broken.push(`${file}: docs/${page}`);
          continue;
        }
        const anchors = [...readFileSync(path, 'utf8').matchAll(/^#+\s+(.+)$/gm)].map((h) => slug(h[1]!));
        if (anchor && !anchors.includes(anchor)) broken.push(`${file}: docs/${page}#${anchor}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('cite no document the repository does not hold (a behaviour contract, an issue tracker)', () => {
    // Built from parts so that this file does not match itself.
    const foreign = new RegExp(['SPEC ' + '\u00a7', 'SPEC' + '\\.md', '[Ii]ssue' + ' [0-9]+'].join('|'));
    const found = sourceFiles()
      .filter((file) => !file.endsWith('reserveJob.0.1.lua'))
      .flatMap((file) =>
        readFileSync(join(root, file), 'utf8')
          .split('\n')
          .flatMap((line, i) => (foreign.test(line) ? [`${file}:${i + 1}`] : [])),
      );
    expect(found).toEqual([]);
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
