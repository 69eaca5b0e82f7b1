/**
 * Build step: compiles every lua/*.lua script (includes resolved, constants expanded, unused
 * helpers and comments dropped: src/scripts/compile.ts) into its own readable module,
 * src/scripts/generated/<script>.ts: its compiled Lua, SHA1, a command builder from its
 * header's KEYS and ARGV lines and a reply decoder from its `Returns:` lines
 * Beside them: the codes Lua exports, the reply forms of lib/
 * headers, the function library, and bundle.generated.ts, which exports them all. Nothing is
 * read from disk at run time. Run with `npm run build:lua`; test/scripts.test.ts fails when a
 * generated file is stale.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileLuaLines, exportedConstants, LuaCompileError, tokenize, topLevelNames } from './compile.ts';
import { Needs, renderForms, renderReply, type FormTable, type HandForm } from './decoders.ts';
import { helperNames } from './minify.ts';
import { parseHeader, parseLibForms, resolveIncludeChunks, type LuaChunk, type LuaHeader, type LuaParam } from './loader.ts';
import type { ReplyField } from './replyGrammar.ts';
import { FUNCTION_CLOSE, functionLibrary, functionOpen, NOW_ARG, SETTINGS, SUBJECT_KEYS, withHelpers } from './script.ts';

export const LUA_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'lua');
/** src/scripts/: generated/ and bundle.generated.ts are written here. */
export const SCRIPTS_DIR = dirname(fileURLToPath(import.meta.url));

export function readLuaFile(root: string) {
  return (path: string): string | undefined => {
    const full = join(root, path);
    return existsSync(full) ? readFileSync(full, 'utf8') : undefined;
  };
}

/** One top-level statement of compiled helpers (a local function, a constant): its lib/ file and first name. */
interface HelperChunk {
  /** The lib/ file it comes from, without directory and extension: "holds". */
  lib: string;
  name: string;
  text: string;
}

/** A script compiled: the helpers it uses, then its own code (the body), as lines. */
interface CompiledScript {
  helpers: string[];
  /** helpers, split into their top-level statements. */
  chunks: HelperChunk[];
  body: string[];
  /** The lib/ files it includes, helpers before the code that uses them. */
  libs: string[];
  /** Its own file without the include lines: what its function in the library runs. */
  own: string;
}

/**
 * The build's names: lua/lib/'s top-level names by their short names, one map for every script
 * and the library (src/scripts/minify.ts), or none when TOLLGATE_LUA_READABLE=1 asks for the
 * readable build (docs/scripts.md#building).
 */
export function buildNames(root: string = LUA_ROOT): Map<string, string> | undefined {
  if (process.env.TOLLGATE_LUA_READABLE === '1') return undefined;
  const read = readLuaFile(root);
  const declared: string[] = [];
  const uses = new Map<string, number>();
  const files = [
    ...readdirSync(root).filter((f) => f.endsWith('.lua')),
    ...readdirSync(join(root, 'lib'))
      .filter((f) => f.endsWith('.lua'))
      .map((f) => `lib/${f}`),
  ].sort();
  for (const file of files) {
    const names = topLevelNames(read(file)!, file);
    if (file.startsWith('lib/')) declared.push(...names.declared);
    for (const [name, n] of names.uses) uses.set(name, (uses.get(name) ?? 0) + n);
  }
  return helperNames(declared, uses);
}

/** A short name's original, for the export names of generated/lib/ modules. */
const originalOf = (names: ReadonlyMap<string, string> | undefined) => {
  const back = new Map([...(names ?? [])].map(([long, short]) => [short, long]));
  return (name: string) => back.get(name) ?? name;
};

function compileScript(file: string, root: string, names?: ReadonlyMap<string, string>): CompiledScript {
  const chunks = resolveIncludeChunks(file, readLuaFile(root));
  const own = chunks.at(-1)!.text;
  const before = chunks
    .slice(0, -1)
    .map((chunk) => `${chunk.text}\n`)
    .join('');
  const { lines, from } = compileLuaLines(before + own, file, { rename: names });
  const bodyLine = before.split('\n').length;
  const at = from.findIndex((line) => line >= bodyLine);
  const helpers = lines.slice(0, at);
  return {
    helpers,
    chunks: splitHelpers(helpers, from, libAt(chunks), originalOf(names)),
    body: lines.slice(at),
    libs: chunks.slice(0, -1).map((chunk) => chunk.path),
    own,
  };
}

/** Which lib/ file a line of the resolved source (the chunks joined, each with a newline) comes from. */
function libAt(chunks: readonly LuaChunk[]): (line: number) => string {
  const starts: Array<[number, string]> = [];
  let line = 1;
  for (const chunk of chunks) {
    starts.push([line, chunk.path.replace(/^.*\//, '').replace(/\.lua$/, '')]);
    line += `${chunk.text}\n`.split('\n').length - 1;
  }
  return (at) => starts.findLast(([start]) => start <= at)![1];
}

/** Compiled helper lines as their top-level statements, each with its lib/ file and first name. */
function splitHelpers(lines: string[], from: number[], lib: (line: number) => string, original: (name: string) => string): HelperChunk[] {
  const statements = topLevelLocalStatements(lines);
  const starts = [...statements.keys()].sort((a, b) => a - b);
  if (lines.length > 0 && starts[0] !== 0) throw new LuaCompileError(`helpers must open with a local statement, not "${lines[0]}"`);
  return starts.map((start, i) => ({
    lib: lib(from[start]!),
    name: original(statements.get(start)![0]!),
    text: lines.slice(start, starts[i + 1] ?? lines.length).join('\n'),
  }));
}

/** The shipped text of one script: its includes resolved, then compiled (and minified, unless asked not to). */
export function shippedSource(file: string, root: string = LUA_ROOT, minified = true): string {
  const { helpers, body } = compileScript(file, root, minified ? buildNames(root) : undefined);
  return `${[...helpers, ...body].join('\n')}\n`;
}

/** Lua 5.1's limits: locals of one function (the library's main chunk) and upvalues of a closure. */
const MAX_LOCALS = 200;
const MAX_UPVALUES = 60;

/**
 * The build's function library, as the helpers' lines and each script's body. Every lib/
 * helper a script uses is compiled once, with the scripts' bodies inside their functions, and
 * each body must come out word for word as the script's own: a script runs the same code by
 * FCALL as by EVALSHA. Helpers are not moved into rare paths: they are made once anyway.
 */
function compileLibrary(
  scripts: ReadonlyMap<string, CompiledScript>,
  root: string,
  names?: ReadonlyMap<string, string>,
): { helpers: string[]; chunks: HelperChunk[]; bodies: Map<string, string[]> } {
  const libs = [...new Set([...scripts.values()].flatMap((script) => script.libs))].sort();
  const entry = '(library)';
  const read = readLuaFile(root);
  const resolved = resolveIncludeChunks(entry, (path) => (path === entry ? libs.map((lib) => `--@include "${lib}"`).join('\n') : read(path)));
  const helpersText = resolved
    .slice(0, -1)
    .map((chunk) => `${chunk.text}\n`)
    .join('');
  const functions = [...scripts].map(([name, script]) => `${functionOpen('', name)}\n${script.own}\n${FUNCTION_CLOSE}`);
  const { lines, from } = compileLuaLines(helpersText + functions.join('\n'), 'library', { sinkRare: false, rename: names });
  const opens = [...scripts.keys()].map((name) => lines.indexOf(functionOpen('', name)));
  const helpers = lines.slice(0, opens[0]);
  const chunks = splitHelpers(helpers, from, libAt(resolved.slice(0, -1)), originalOf(names));
  const declared = topLevelLocals(helpers);
  if (declared.length > MAX_LOCALS)
    throw new LuaCompileError(`library: ${declared.length} top-level locals, Lua allows ${MAX_LOCALS}: group helpers in tables`);
  const bodies = new Map<string, string[]>();
  [...scripts].forEach(([name, script], i) => {
    const end = i + 1 < opens.length ? opens[i + 1]! : lines.length;
    const body = lines.slice(opens[i]! + 1, end - 1);
    if (opens[i]! < 0 || lines[end - 1] !== FUNCTION_CLOSE || body.join('\n') !== script.body.join('\n')) {
      throw new LuaCompileError(`library: the function of ${name} does not run the script's own code`);
    }
    const upvalues = namesIn(body).filter((used) => declared.includes(used));
    if (upvalues.length > MAX_UPVALUES) throw new LuaCompileError(`library: ${name} uses ${upvalues.length} helpers, Lua allows ${MAX_UPVALUES} upvalues`);
    bodies.set(name, body);
  });
  return { helpers, chunks, bodies };
}

const OPENERS = new Set(['function', 'if', 'do', 'repeat']);
const CLOSERS = new Set(['end', 'until']);

/** The top-level `local` statements of compiled lines: the names each declares, by line. */
function topLevelLocalStatements(lines: string[]): Map<number, string[]> {
  const code = lines.flatMap((line, index) => tokenize(line).flatMap((t) => (t.kind === 'space' ? [] : [{ ...t, index }])));
  const statements = new Map<number, string[]>();
  let depth = 0;
  code.forEach((t, i) => {
    if (t.kind !== 'name') return;
    if (OPENERS.has(t.text)) depth++;
    else if (CLOSERS.has(t.text)) depth--;
    else if (t.text === 'local' && depth === 0) {
      let j = code[i + 1]?.text === 'function' ? i + 2 : i + 1;
      const names = [code[j]!.text];
      while (code[j + 1]?.text === ',' && code[j + 2]?.kind === 'name') names.push(code[(j += 2)]!.text);
      statements.set(t.index, names);
    }
  });
  return statements;
}

/** The names declared by top-level `local` statements of compiled lines. */
export function topLevelLocals(lines: string[]): string[] {
  return [...topLevelLocalStatements(lines).values()].flat();
}

/** Every distinct name compiled lines mention (field names after "." or ":" aside). */
function namesIn(lines: string[]): string[] {
  const code = lines.flatMap((line) => tokenize(line).filter((t) => t.kind !== 'space'));
  return [...new Set(code.filter((t, i) => t.kind === 'name' && code[i - 1]?.text !== '.' && code[i - 1]?.text !== ':').map((t) => t.text))];
}

const isNumber = (p: LuaParam) => p.type === 'integer' || p.type === '0|1';
const has = (list: readonly string[], name: string) => list.includes(name);

function keyWord(p: LuaParam): string {
  if (p.rest) return `...p.${p.name}`;
  return has(SUBJECT_KEYS, p.name) ? `k.${p.name}` : `p.${p.name}`;
}

/** The numkeys word: a count, or with a list of keys last, the count plus the list's length. */
function keyCount(keys: LuaParam[]): string {
  const rest = keys.at(-1)?.rest ? keys.at(-1)! : undefined;
  return rest ? `String(p.${rest.name}.length + ${keys.length - 1})` : `"${keys.length}"`;
}

function argWord(p: LuaParam): string {
  if (p.name === NOW_ARG) return 'now';
  if (has(SETTINGS, p.name)) return `s.${p.name}`;
  return isNumber(p) ? `String(p.${p.name})` : `p.${p.name}`;
}

/** The params a caller passes: every key and argument that is not filled in by name. */
function paramsType(keys: LuaParam[], args: LuaParam[]): string {
  const own = [
    ...keys.filter((k) => !has(SUBJECT_KEYS, k.name)).map((k) => `${k.name}: ${k.rest ? 'readonly string[]' : 'string'}`),
    ...args.filter((a) => a.name !== NOW_ARG && !has(SETTINGS, a.name)).map((a) => `${a.name}: ${isNumber(a) ? 'number' : 'string'}`),
  ];
  return own.length === 0 ? 'Record<string, never>' : `{ ${own.join('; ')} }`;
}

/** Where a reply form is decoded by hand (the rest come from lib/ headers, into ./forms.ts). */
const HAND_FORMS: Record<string, HandForm> = {
  windows: { type: 'WindowsForm', decoder: 'windowsForm', module: '../../windows.ts', inline: true },
};

const GENERATED_NOTE = (from: string) => `// Generated by src/scripts/bundle.ts from ${from}. Do not edit: run \`npm run build:lua\`.`;

/** Lua text as a TypeScript literal: String.raw keeps it as it is, one Lua line per line. */
function luaLiteral(text: string): string {
  return text.includes('`') || text.includes('${') ? JSON.stringify(text) : `String.raw\`${text}\``;
}

const pascal = (name: string) => `${name[0]!.toUpperCase()}${name.slice(1)}`;

function importLines(needs: Needs, extra: { code?: boolean; codeType?: boolean; script?: boolean }): string[] {
  const readers = [...needs.readers].sort();
  const out: string[] = [];
  if (extra.code) out.push(`import { CODE } from "./codes.ts";`);
  if (extra.codeType) out.push(`import type { Code } from "./codes.ts";`);
  if (readers.length) out.push(`import { ${readers.join(', ')} } from "../reply.ts";`);
  if (extra.script) out.push(`import type { Script } from "../script.ts";`);
  if (needs.forms.size)
    out.push(
      `import { ${[...needs.forms]
        .sort()
        .map((n) => (/^[A-Z]/.test(n) ? `type ${n}` : n))
        .join(', ')} } from "./forms.ts";`,
    );
  for (const [module, names] of needs.hand)
    out.push(
      `import { ${[...names]
        .sort()
        .map((n) => (/^[A-Z]/.test(n) ? `type ${n}` : n))
        .join(', ')} } from "${module}";`,
    );
  return out;
}

function constLines(needs: Needs): string[] {
  return needs.consts.map((value, i) => `const ONE_OF_${i} = ${value};`);
}

const functionNames = (text: string) => [...text.matchAll(/\blocal function (\w+)/g)].map((m) => m[1]!);

/**
 * The compiled helpers by lib/ file (generated/lib/<file>.ts), each statement once under its
 * name, as the function library has it. Where a script moves helpers that only a rare path
 * uses into it, the script's module builds that variant from the same statements
 * (withHelpers, src/scripts/script.ts), so no helper's text ships twice; a variant that is not
 * so made (none is, today) is registered as <name>_with_helpers.
 */
class HelperModules {
  /** Per lib/ file, export name -> text, in the order first met. */
  readonly byLib = new Map<string, Map<string, string>>();
  /** A variant's note: the helpers moved into it. */
  readonly notes = new Map<string, string>();
  /** The library's statements by `<lib>.<name>`, and each one's lib by its name. */
  private readonly base = new Map<string, string>();
  private readonly libOf = new Map<string, string>();
  private readonly original: (name: string) => string;

  constructor(library: readonly HelperChunk[], original: (name: string) => string) {
    this.original = original;
    for (const c of library) {
      this.base.set(`${c.lib}.${c.name}`, c.text);
      this.libOf.set(c.name, c.lib);
      this.texts(c.lib).set(c.name, c.text);
    }
  }

  private texts(lib: string): Map<string, string> {
    let texts = this.byLib.get(lib);
    if (!texts) this.byLib.set(lib, (texts = new Map()));
    return texts;
  }

  /** A script's helper statement as an expression over the lib/ modules, and the lib/ files it reads. */
  expressionOf(c: HelperChunk): { expression: string; libs: string[] } {
    const base = this.base.get(`${c.lib}.${c.name}`);
    const ref = (lib: string, name: string) => `${libNamespace(lib)}.${name}`;
    if (base === c.text) return { expression: ref(c.lib, c.name), libs: [c.lib] };
    const moved = base === undefined ? [] : functionNames(c.text).filter((n) => !functionNames(base).includes(n));
    // Moved in whole after its first line: then it is made of the library's statements.
    const parts = moved.map((short) => {
      const name = this.original(short);
      const lib = this.libOf.get(name);
      return { name, lib, text: lib === undefined ? undefined : this.base.get(`${lib}.${name}`) };
    });
    if (base?.includes('\n') && parts.every((p) => p.text !== undefined)) {
      if (
        withHelpers(
          base,
          parts.map((p) => p.text!),
        ) === c.text
      ) {
        return {
          expression: `withHelpers(${ref(c.lib, c.name)}, [${parts.map((p) => ref(p.lib!, p.name)).join(', ')}])`,
          libs: [c.lib, ...parts.map((p) => p.lib!)],
        };
      }
    }
    const texts = this.texts(c.lib);
    const stem = base === undefined ? c.name : `${c.name}_with_helpers`;
    let name = stem;
    for (let i = 2; texts.has(name) && texts.get(name) !== c.text; i++) name = `${stem}_${i}`;
    texts.set(name, c.text);
    if (moved.length > 0)
      this.notes.set(`${c.lib}.${name}`, `${c.name} with the helpers only it uses moved into it (a rare path): ${moved.map(this.original).join(', ')}.`);
    return { expression: ref(c.lib, name), libs: [c.lib] };
  }
}

const libNamespace = (lib: string) => `${lib}Lua`;

/** The helpers' text as an expression: the statements of the lib/ modules, by name, joined. */
function helpersExpression(chunks: readonly HelperChunk[], modules: HelperModules): { expression: string; imports: string[] } {
  const parts = chunks.map((c) => modules.expressionOf(c));
  const libs = [...new Set(parts.flatMap((p) => p.libs))].sort();
  const imports = libs.map((lib) => `import * as ${libNamespace(lib)} from "./lib/${lib}.ts";`);
  if (parts.some((p) => p.expression.startsWith('withHelpers('))) imports.unshift(`import { withHelpers } from "../script.ts";`);
  const expression = `[\n${parts.map((p) => `  ${p.expression},`).join('\n')}\n].join("\\n")`;
  return { expression, imports };
}

/** One script's generated module: its Lua, command builder and reply decoder. */
function renderScript(file: string, header: LuaHeader, compiled: CompiledScript, forms: FormTable, modules: HelperModules): string {
  const { name } = header;
  const needs = new Needs(forms);
  const reply = renderReply(`${pascal(name)}Reply`, header.returns, needs, `lua/${file}`);
  const helpers = compiled.helpers.join('\n');
  const used = helpersExpression(compiled.chunks, modules);
  const body = compiled.body.join('\n');
  const source = helpers ? `${helpers}\n${body}\n` : `${body}\n`;
  const sha1 = createHash('sha1').update(source).digest('hex');
  const words = [`f ? "FCALL" : "EVALSHA"`, `f ? FUNCTION : SHA1`, keyCount(header.keys), ...header.keys.map(keyWord), ...header.args.map(argWord)];
  const uses = (v: string) => words.some((w) => new RegExp(`(^|[^\\w.])${v}\\b`).test(w));
  const usesCode = reply.decode.includes('CODE.') || reply.type.includes('CODE.');
  // The generated module's own template literal, written as text.
  // biome-ignore lint/suspicious/noTemplateCurlyInString: it is the text of generated code
  const sourceLiteral = helpers ? '`${HELPERS}\\n${BODY}\\n`' : '`${BODY}\\n`';
  return `${GENERATED_NOTE(`lua/${file}`)}
${importLines(needs, { code: usesCode, codeType: true, script: true }).join('\n')}
import { BUILD_ID } from "./build.ts";
${used.imports.join('\n')}
${constLines(needs)
  .map((l) => `\n${l}`)
  .join('')}${constLines(needs).length ? '\n' : ''}
/** What a caller passes to ${name}: the subject's keys, the settings and now are filled in by name. */
export type ${pascal(name)}Params = ${paramsType(header.keys, header.args)};

/** ${name}'s reply, as lua/${file}'s header declares it. */
${reply.type}

${helpers ? `/** The lib/ helpers ${name} uses, compiled, in order (generated/lib/). */\nconst HELPERS = ${used.expression};\n\n` : ''}/** lua/${file}'s own code, compiled. */
const BODY = ${luaLiteral(body)};

const SHA1 = ${JSON.stringify(sha1)};
const FUNCTION = \`tg\${BUILD_ID}_${name}\`;

export const ${name}: Script<${pascal(name)}Params, ${pascal(name)}Reply> = {
  name: ${JSON.stringify(name)},
  sha1: SHA1,
  fn: FUNCTION,
  body: BODY,
  source: ${sourceLiteral},
  command: (${uses('now') ? 'now' : '_now'}, ${uses('s') ? 's' : '_s'}, ${uses('k') ? 'k' : '_k'}, ${uses('p') ? 'p' : '_p'}, f) => [${words.join(', ')}],
  decode: ${reply.decode},
};
`;
}

/** generated/lib/<file>.ts: the compiled statements of one lib/ file, each once, by name. */
function renderHelperModule(lib: string, texts: ReadonlyMap<string, string>, notes: ReadonlyMap<string, string>): string {
  const entries = [...texts].map(([name, text]) => {
    const note = notes.get(`${lib}.${name}`);
    return `${note ? `/** ${note} */\n` : ''}export const ${name} = ${luaLiteral(text)};`;
  });
  return `${GENERATED_NOTE(`lua/lib/${lib}.lua`)}\n// Its top-level statements, compiled; the scripts' modules join the ones they use.\n\n${entries.join('\n\n')}\n`;
}

/**
 * Every generated file, by its path under src/scripts/: one module per script in generated/,
 * the codes and constants Lua exports, the reply forms of lib/ headers, the function library,
 * the build id, and bundle.generated.ts, which exports them all.
 */
export function renderGenerated(root: string = LUA_ROOT): Map<string, string> {
  const read = readLuaFile(root);
  const files = readdirSync(root)
    .filter((f) => f.endsWith('.lua'))
    .sort();
  const headers = files.map((file) => parseHeader(read(file)!, file));
  const short = buildNames(root);
  const scripts = new Map(files.map((file, i) => [headers[i]!.name, compileScript(file, root, short)]));
  const library = compileLibrary(scripts, root, short);
  const joined = (lines: string[]) => lines.join('\n');
  const id = buildId(joined(library.helpers), new Map([...library.bodies].map(([name, body]) => [name, joined(body)])));
  const libs = readdirSync(join(root, 'lib'))
    .filter((f) => f.endsWith('.lua'))
    .sort();
  const declared = new Map(
    libs.flatMap((file) =>
      [...parseLibForms(read(`lib/${file}`)!, `lib/${file}`)].map(([name, fields]) => [name, { file: `lua/lib/${file}`, fields }] as const),
    ),
  );
  const constants = libs.flatMap((file) =>
    Object.entries(exportedConstants(read(`lib/${file}`)!, `lib/${file}`)).map(([name, fields]) => ({ file, name, fields })),
  );
  checkFormPositions(declared, constants);
  const forms: FormTable = { generated: new Set(declared.keys()), hand: HAND_FORMS };
  const out = new Map<string, string>();
  out.set(
    'generated/build.ts',
    `${GENERATED_NOTE('lua/')}\n\n/** The build id: 10 hex digits of the SHA1 of the function library's text, written without an id. */\nexport const BUILD_ID = ${JSON.stringify(id)};\n`,
  );
  out.set(
    'generated/names.ts',
    `${GENERATED_NOTE('lua/lib/')}
// Not shipped: for reading the minified Lua. A line of a shipped script is the same line of the
// readable build (TOLLGATE_LUA_READABLE=1 npm run build:lua), and lib/'s top-level names are:

/** Each lib/ top-level name in the shipped Lua, by its name in lua/lib/ (docs/scripts.md#building). */
export const HELPER_NAMES: Record<string, string> = ${JSON.stringify(Object.fromEntries([...(short ?? [])].map(([long, name]) => [name, long])), null, 2)};
`,
  );
  out.set(
    'generated/codes.ts',
    `${GENERATED_NOTE('lua/lib/')}\n\n${constants.map(({ file, name, fields }) => `/** lua/lib/${file}'s ${name}. */\nexport const ${name} = ${JSON.stringify(fields, null, 2)} as const;`).join('\n\n')}\n\n/** One of the result codes. */\nexport type Code = (typeof CODE)[keyof typeof CODE];\n`,
  );
  const formNeeds = new Needs(forms);
  const formCode = renderForms(declared, formNeeds);
  out.set(
    'generated/forms.ts',
    `${GENERATED_NOTE('the Reply form lines of lua/lib/ headers')}\n${importLines(formNeeds, {}).join('\n')}\n\n${constLines(formNeeds).join('\n')}\n\n${formCode}\n`,
  );
  const modules = new HelperModules(library.chunks, originalOf(short));
  const libraryHelpers = helpersExpression(library.chunks, modules);
  headers.forEach((header, i) => {
    out.set(`generated/${header.name}.ts`, renderScript(files[i]!, header, scripts.get(header.name)!, forms, modules));
  });
  for (const [lib, texts] of [...modules.byLib].sort(([a], [b]) => a.localeCompare(b)))
    out.set(`generated/lib/${lib}.ts`, renderHelperModule(lib, texts, modules.notes));
  const names = headers.map((h) => h.name);
  out.set(
    'generated/library.ts',
    `${GENERATED_NOTE('lua/')}
import { functionLibrary, type FunctionLibrary } from "../script.ts";
import { BUILD_ID } from "./build.ts";
${libraryHelpers.imports.join('\n')}
${names.map((n) => `import { ${n} } from "./${n}.ts";`).join('\n')}

/** Every lib/ helper the scripts use, compiled once for the function library (generated/lib/). */
const HELPERS = ${libraryHelpers.expression};

/** Every script as a function of one library, the helpers defined once. */
export const LIBRARY: FunctionLibrary = functionLibrary(BUILD_ID, HELPERS, {
${names.map((n) => `  ${n}: ${n}.body,`).join('\n')}
});
`,
  );
  out.set(
    'bundle.generated.ts',
    `${GENERATED_NOTE('lua/')}
// Every generated module of src/scripts/generated/, for one import.
export * from "./generated/codes.ts";
export * from "./generated/forms.ts";
export { LIBRARY } from "./generated/library.ts";
${names.map((n) => `export { ${n} } from "./generated/${n}.ts";`).join('\n')}
`,
  );
  return out;
}

/**
 * A generated form's fields must sit where the Lua puts them: when a lib/ file exports a
 * positions table named <FORM>_REPLY, each field before the rest is at its position.
 */
function checkFormPositions(
  forms: ReadonlyMap<string, { file: string; fields: ReplyField[] }>,
  constants: ReadonlyArray<{ name: string; fields: Record<string, string | number> }>,
): void {
  for (const [name, { file, fields }] of forms) {
    const table = constants.find((c) => c.name === `${name.toUpperCase()}_REPLY`);
    if (!table) continue;
    const fixed = fields.filter((f) => !f.rest).map((f) => f.name);
    const expected = Object.entries(table.fields)
      .sort((a, b) => Number(a[1]) - Number(b[1]))
      .map(([field]) => field);
    if (fixed.join(',') !== expected.join(',')) {
      throw new LuaCompileError(`${file}: reply form ${name} lists ${fixed.join(', ')}, but ${table.name} puts ${expected.join(', ')}`);
    }
  }
}

/** The build id: 10 hex digits of the SHA1 of the library's text, written without an id. */
function buildId(helpers: string, bodies: ReadonlyMap<string, string>): string {
  const text = functionLibrary('', helpers, Object.fromEntries(bodies)).source;
  return createHash('sha1').update(text).digest('hex').slice(0, 10);
}

/** Writes every generated file, and removes those of scripts that are gone. */
export function writeGenerated(root: string = LUA_ROOT): string[] {
  const files = renderGenerated(root);
  mkdirSync(join(SCRIPTS_DIR, 'generated', 'lib'), { recursive: true });
  for (const old of readdirSync(join(SCRIPTS_DIR, 'generated'), { recursive: true, encoding: 'utf8' })) {
    if (old.endsWith('.ts') && !files.has(`generated/${old}`)) rmSync(join(SCRIPTS_DIR, 'generated', old));
  }
  for (const [path, text] of files) writeFileSync(join(SCRIPTS_DIR, path), text);
  return [...files.keys()];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const written = writeGenerated();
  console.log(`wrote ${written.length} files under ${SCRIPTS_DIR}`);
}
