/**
 * Build step: compiles every lua/*.lua script (includes resolved, constants expanded, unused
 * helpers and comments dropped: src/scripts/compile.ts) into src/scripts/bundle.generated.ts
 * with its SHA1 and a command builder generated from its header, so
 * nothing is read from disk at run time. Run with `npm run build:lua`;
 * test/scripts.test.ts fails when the generated file is stale.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compileLuaLines, exportedConstants, LuaCompileError, tokenize } from "./compile.ts";
import { parseHeader, resolveIncludeChunks, type LuaParam } from "./loader.ts";
import { FUNCTION_CLOSE, functionLibrary, functionOpen, NOW_ARG, SETTINGS, SUBJECT_ARGS, SUBJECT_KEYS } from "./script.ts";

export const LUA_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "lua");
export const GENERATED = join(dirname(fileURLToPath(import.meta.url)), "bundle.generated.ts");

export function readLuaFile(root: string) {
  return (path: string): string | undefined => {
    const full = join(root, path);
    return existsSync(full) ? readFileSync(full, "utf8") : undefined;
  };
}

/** A script compiled: the helpers it uses, then its own code (the body), as lines. */
interface CompiledScript {
  helpers: string[];
  body: string[];
  /** The lib/ files it includes, helpers before the code that uses them. */
  libs: string[];
  /** Its own file without the include lines: what its function in the library runs. */
  own: string;
}

function compileScript(file: string, root: string): CompiledScript {
  const chunks = resolveIncludeChunks(file, readLuaFile(root));
  const own = chunks.at(-1)!.text;
  const before = chunks.slice(0, -1).map((chunk) => `${chunk.text}\n`).join("");
  const { lines, from } = compileLuaLines(before + own, file);
  const bodyLine = before.split("\n").length;
  const at = from.findIndex((line) => line >= bodyLine);
  return { helpers: lines.slice(0, at), body: lines.slice(at), libs: chunks.slice(0, -1).map((chunk) => chunk.path), own };
}

/** The shipped text of one script: its includes resolved, then compiled. */
export function shippedSource(file: string, root: string = LUA_ROOT): string {
  const { helpers, body } = compileScript(file, root);
  return `${[...helpers, ...body].join("\n")}\n`;
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
function compileLibrary(scripts: ReadonlyMap<string, CompiledScript>, root: string): { helpers: string[]; bodies: Map<string, string[]> } {
  const libs = [...new Set([...scripts.values()].flatMap((script) => script.libs))].sort();
  const entry = "(library)";
  const read = readLuaFile(root);
  const chunks = resolveIncludeChunks(entry, (path) => (path === entry ? libs.map((lib) => `--@include "${lib}"`).join("\n") : read(path)));
  const helpersText = chunks.slice(0, -1).map((chunk) => `${chunk.text}\n`).join("");
  const functions = [...scripts].map(([name, script]) => `${functionOpen("", name)}\n${script.own}\n${FUNCTION_CLOSE}`);
  const { lines } = compileLuaLines(helpersText + functions.join("\n"), "library", { sinkRare: false });
  const opens = [...scripts.keys()].map((name) => lines.indexOf(functionOpen("", name)));
  const helpers = lines.slice(0, opens[0]);
  const declared = topLevelLocals(helpers);
  if (declared.length > MAX_LOCALS) throw new LuaCompileError(`library: ${declared.length} top-level locals, Lua allows ${MAX_LOCALS}: group helpers in tables`);
  const bodies = new Map<string, string[]>();
  [...scripts].forEach(([name, script], i) => {
    const end = i + 1 < opens.length ? opens[i + 1]! : lines.length;
    const body = lines.slice(opens[i]! + 1, end - 1);
    if (opens[i]! < 0 || lines[end - 1] !== FUNCTION_CLOSE || body.join("\n") !== script.body.join("\n")) {
      throw new LuaCompileError(`library: the function of ${name} does not run the script's own code`);
    }
    const upvalues = namesIn(body).filter((used) => declared.includes(used));
    if (upvalues.length > MAX_UPVALUES) throw new LuaCompileError(`library: ${name} uses ${upvalues.length} helpers, Lua allows ${MAX_UPVALUES} upvalues`);
    bodies.set(name, body);
  });
  return { helpers, bodies };
}

const OPENERS = new Set(["function", "if", "do", "repeat"]);
const CLOSERS = new Set(["end", "until"]);

/** The top-level `local` statements of compiled lines: the names each declares, by line. */
function topLevelLocalStatements(lines: string[]): Map<number, string[]> {
  const code = lines.flatMap((line, index) => tokenize(line).flatMap((t) => (t.kind === "space" ? [] : [{ ...t, index }])));
  const statements = new Map<number, string[]>();
  let depth = 0;
  code.forEach((t, i) => {
    if (t.kind !== "name") return;
    if (OPENERS.has(t.text)) depth++;
    else if (CLOSERS.has(t.text)) depth--;
    else if (t.text === "local" && depth === 0) {
      let j = code[i + 1]?.text === "function" ? i + 2 : i + 1;
      const names = [code[j]!.text];
      while (code[j + 1]?.text === "," && code[j + 2]?.kind === "name") names.push(code[(j += 2)]!.text);
      statements.set(t.index, names);
    }
  });
  return statements;
}

/** The names declared by top-level `local` statements of compiled lines. */
export function topLevelLocals(lines: string[]): string[] {
  return [...topLevelLocalStatements(lines).values()].flat();
}

/** The indexes of the lines that start a top-level `local` statement. */
function topLevelLocalLines(lines: string[]): Set<number> {
  return new Set(topLevelLocalStatements(lines).keys());
}

/** Every distinct name compiled lines mention (field names after "." or ":" aside). */
function namesIn(lines: string[]): string[] {
  const code = lines.flatMap((line) => tokenize(line).filter((t) => t.kind !== "space"));
  return [...new Set(code.filter((t, i) => t.kind === "name" && code[i - 1]?.text !== "." && code[i - 1]?.text !== ":").map((t) => t.text))];
}

const isNumber = (p: LuaParam) => p.type === "integer" || p.type === "0|1";
const has = (list: readonly string[], name: string) => list.includes(name);

function keyWord(p: LuaParam): string {
  return has(SUBJECT_KEYS, p.name) ? `k.${p.name}` : `p.${p.name}`;
}

function argWord(p: LuaParam): string {
  if (p.name === NOW_ARG) return "now";
  if (has(SETTINGS, p.name)) return `s.${p.name}`;
  if (has(SUBJECT_ARGS, p.name)) return `k.${p.name}`;
  return isNumber(p) ? `String(p.${p.name})` : `p.${p.name}`;
}

/** The params a caller passes: every key and argument that is not filled in by name. */
function paramsType(keys: LuaParam[], args: LuaParam[]): string {
  const own = [
    ...keys.filter((k) => !has(SUBJECT_KEYS, k.name)).map((k) => `${k.name}: string`),
    ...args
      .filter((a) => a.name !== NOW_ARG && !has(SETTINGS, a.name) && !has(SUBJECT_ARGS, a.name))
      .map((a) => `${a.name}: ${isNumber(a) ? "number" : "string"}`),
  ];
  return own.length === 0 ? "Record<string, never>" : `{ ${own.join("; ")} }`;
}

/**
 * The shipped sources as pieces, each kept once: a script is its pieces joined by newlines.
 * Scripts share most of their helpers (lua/lib/), so the package carries each helper once
 * and the scripts are put together when the module loads (the packed size).
 */
class Pieces {
  readonly list: string[] = [];
  private readonly index = new Map<string, number>();

  /**
   * The piece numbers of compiled lines, split before each line that starts a local function
   * and, in helpers, each top-level local: so a helper is the same piece whatever precedes it,
   * in a script or in the function library.
   */
  of(lines: string[], helpers = false): number[] {
    if (lines.length === 0) return [];
    const starts = helpers ? topLevelLocalLines(lines) : new Set<number>();
    const parts: string[][] = [[]];
    lines.forEach((line, i) => {
      if ((line.startsWith("local function ") || starts.has(i)) && parts.at(-1)!.length > 0) parts.push([]);
      parts.at(-1)!.push(line);
    });
    return parts.map((lines) => {
      const piece = lines.join("\n");
      let i = this.index.get(piece);
      if (i === undefined) {
        i = this.list.push(piece) - 1;
        this.index.set(piece, i);
      }
      return i;
    });
  }
}

export function renderBundle(root: string = LUA_ROOT): string {
  const read = readLuaFile(root);
  const files = readdirSync(root).filter((f) => f.endsWith(".lua")).sort();
  const headers = files.map((file) => parseHeader(read(file)!, file));
  const scripts = new Map(files.map((file, i) => [headers[i]!.name, compileScript(file, root)]));
  const library = compileLibrary(scripts, root);
  const joined = (lines: string[]) => lines.join("\n");
  const id = buildId(joined(library.helpers), new Map([...library.bodies].map(([name, body]) => [name, joined(body)])));
  const pieces = new Pieces();
  const bodies: string[] = [];
  const entries = headers.map((header) => {
    const { helpers, body } = scripts.get(header.name)!;
    const sha1 = createHash("sha1").update(`${joined([...helpers, ...body])}\n`).digest("hex");
    const fn = `tg${id}_${header.name}`;
    const words = [`f ? "FCALL" : "EVALSHA"`, `f ? "${fn}" : "${sha1}"`, `"${header.keys.length}"`, ...header.keys.map(keyWord), ...header.args.map(argWord)];
    const uses = (name: string) => words.some((w) => w.startsWith(`${name}.`) || w === name);
    const params = `${uses("p") || words.some((w) => w.includes("(p."))  ? "p" : "_p"}`;
    const own = pieces.of(body);
    bodies.push(`${header.name}: [${own.join(", ")}]`);
    return `export const ${header.name}: Script<${paramsType(header.keys, header.args)}> = {
  name: ${JSON.stringify(header.name)},
  sha1: ${JSON.stringify(sha1)},
  fn: ${JSON.stringify(fn)},
  source: lua(${[...pieces.of(helpers, true), ...own].join(", ")}),
  command: (${uses("now") ? "now" : "_now"}, ${uses("s") ? "s" : "_s"}, ${uses("k") ? "k" : "_k"}, ${params}, f) => [${words.join(", ")}],
};`;
  });
  const helperPieces = pieces.of(library.helpers, true);
  const libs = readdirSync(join(root, "lib")).filter((f) => f.endsWith(".lua")).sort();
  const constants = libs.flatMap((file) =>
    Object.entries(exportedConstants(read(`lib/${file}`)!, `lib/${file}`)).map(
      ([name, fields]) => `/** lua/lib/${file}'s ${name}. */\nexport const ${name} = ${JSON.stringify(fields)} as const;`,
    ),
  );
  return `// Generated by src/scripts/bundle.ts from lua/. Do not edit: run \`npm run build:lua\`.
import { functionLibrary, type FunctionLibrary, type Script } from "./script.ts";

${constants.join("\n\n")}

/** The pieces of the shipped sources, each once. */
const PIECES: readonly string[] = [
${pieces.list.map((p) => `  ${JSON.stringify(p)},`).join("\n")}
];

function lines(parts: readonly number[]): string {
  return parts.map((i) => PIECES[i]).join("\\n");
}

function lua(...parts: number[]): string {
  return \`\${lines(parts)}\\n\`;
}

${entries.join("\n\n")}

/** Every script as a function of one library, the helpers defined once. */
export const LIBRARY: FunctionLibrary = functionLibrary(${JSON.stringify(id)}, lines([${helperPieces.join(", ")}]), {
${bodies.map((b) => `  ${b},`).join("\n")}
}, lines);
`;
}

/** The build id: 10 hex digits of the SHA1 of the library's text, written without an id. */
function buildId(helpers: string, bodies: ReadonlyMap<string, string>): string {
  const text = functionLibrary("", helpers, Object.fromEntries(bodies), (body) => body).source;
  return createHash("sha1").update(text).digest("hex").slice(0, 10);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(GENERATED, renderBundle());
  console.log(`wrote ${GENERATED}`);
}
