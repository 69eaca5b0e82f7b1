// The API reference (issue 13): every public export of every subpath has a JSDoc comment, and
// so does every public member of the classes and interfaces among them; `npm run docs`
// (TypeDoc, typedoc.json) builds the reference without a warning (broken {@link}s, public
// types that name a type nobody can import).
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const typedocConfig = JSON.parse(readFileSync(join(root, 'typedoc.json'), 'utf8'));

/** The source entry of each subpath the package exports. */
const ENTRIES: Record<string, string> = {
  '.': 'src/index.ts',
  './model': 'src/model/index.ts',
  './express': 'src/express.ts',
  './koa': 'src/koa.ts',
  './fastify': 'src/fastify.ts',
  './hono': 'src/hono.ts',
};

function program(): { checker: ts.TypeChecker; files: Map<string, ts.SourceFile> } {
  const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.build.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
  const built = ts.createProgram(Object.values(ENTRIES).map((file) => join(root, file)), config.options);
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
    expect(Object.keys(ENTRIES).sort()).toEqual(Object.keys(manifest.exports).filter((p) => p !== './package.json').sort());
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
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [cli, '--emit', 'none', '--treatWarningsAsErrors'], { cwd: root, env: { ...process.env, NO_COLOR: '1' } });
    expect(`${stdout}${stderr}`).not.toMatch(/\[(warning|error)\]/);
  }, 60_000);
});
