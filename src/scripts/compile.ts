/**
 * Build-time compilation of a resolved Lua script into what ships (hot Lua
 * runs straight-line with literal field names; shipped artefacts are lean):
 *   - constant tables: a `local NAME = { field = 'literal', ... }` table marked by a `--@const`
 *     comment line above it is not built at run time. `NAME.field` becomes the literal, and a
 *     bare `NAME` (a rare path that walks the table) becomes the table constructor, built only
 *     where that code runs. An unknown field is a build error naming the file and line.
 *   - unused helpers: a top-level `local function f` that nothing calls is dropped, so a
 *     script pays only for the helpers it uses.
 *   - comments and blank lines are dropped; every other line keeps its tokens in order.
 * The lexer knows Lua 5.1's strings, long brackets and comments, so a `--` inside a string is
 * never taken for a comment. Pure: the source comes in, the compiled text goes out.
 */

import { LuaCompileError } from './luaCompileError.ts';
import { needsSpace, renameLocals } from './minify.ts';

export { LuaCompileError } from './luaCompileError.ts';

type TokenKind = 'name' | 'number' | 'string' | 'comment' | 'symbol' | 'newline' | 'space';

interface Token {
  kind: TokenKind;
  text: string;
  /** 1-based line in the resolved source where the token starts. */
  line: number;
}

const LONG_OPEN = /^\[(=*)\[/;

function longBracketEnd(source: string, at: number, level: string): number {
  const close = `]${level}]`;
  const end = source.indexOf(close, at);
  return end < 0 ? -1 : end + close.length;
}

/** Splits Lua source into tokens; whitespace and newlines are kept so lines can be rebuilt. */
export function tokenize(source: string, file = 'script'): Token[] {
  const tokens: Token[] = [];
  let line = 1;
  let i = 0;
  const push = (kind: TokenKind, text: string) => {
    tokens.push({ kind, text, line });
    for (const ch of text) if (ch === '\n') line++;
  };
  while (i < source.length) {
    const ch = source[i]!;
    const rest = source.slice(i, i + 256);
    if (ch === '\n') {
      push('newline', '\n');
      i++;
    } else if (ch === ' ' || ch === '\t' || ch === '\r') {
      let j = i;
      while (j < source.length && /[ \t\r]/.test(source[j]!)) j++;
      push('space', source.slice(i, j));
      i = j;
    } else if (rest.startsWith('--')) {
      const long = LONG_OPEN.exec(source.slice(i + 2, i + 2 + 64));
      let end: number;
      if (long) {
        end = longBracketEnd(source, i + 2 + long[0].length, long[1]!);
        if (end < 0) throw new LuaCompileError(`${file}:${line}: unfinished long comment`);
      } else {
        end = source.indexOf('\n', i);
        if (end < 0) end = source.length;
      }
      push('comment', source.slice(i, end));
      i = end;
    } else if (ch === '[' && LONG_OPEN.test(rest)) {
      const long = LONG_OPEN.exec(rest)!;
      const end = longBracketEnd(source, i + long[0].length, long[1]!);
      if (end < 0) throw new LuaCompileError(`${file}:${line}: unfinished long string`);
      push('string', source.slice(i, end));
      i = end;
    } else if (ch === "'" || ch === '"') {
      let j = i + 1;
      while (j < source.length && source[j] !== ch) {
        if (source[j] === '\\') j++;
        if (source[j] === '\n') throw new LuaCompileError(`${file}:${line}: unfinished string`);
        j++;
      }
      if (j >= source.length) throw new LuaCompileError(`${file}:${line}: unfinished string`);
      push('string', source.slice(i, j + 1));
      i = j + 1;
    } else if (/[A-Za-z_]/.test(ch)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest)!;
      push('name', m[0]);
      i += m[0].length;
    } else if (/[0-9]/.test(ch) || (ch === '.' && /[0-9]/.test(source[i + 1] ?? ''))) {
      const m = /^(0[xX][0-9a-fA-F]+|[0-9]*\.?[0-9]+([eE][+-]?[0-9]+)?)/.exec(rest)!;
      push('number', m[0]);
      i += m[0].length;
    } else {
      const m = /^(\.\.\.|\.\.|==|~=|<=|>=|.)/s.exec(rest)!;
      push('symbol', m[0]);
      i += m[0].length;
    }
  }
  return tokens;
}

/** The code tokens (no space, newline or comment) with their index in the full list. */
function codeIndexes(tokens: Token[]): number[] {
  const out: number[] = [];
  tokens.forEach((t, i) => {
    if (t.kind !== 'space' && t.kind !== 'newline' && t.kind !== 'comment') out.push(i);
  });
  return out;
}

interface ConstTable {
  name: string;
  /** Marked `--@const export`: the bundle also gives it to TypeScript. */
  exported: boolean;
  fields: Map<string, string>;
  /** The constructor text, `{ a = 'x', b = 2 }`, for bare uses. */
  constructor: string;
  /** Token range [from, to] of the declaration, removed from the output. */
  from: number;
  to: number;
}

/** Finds the `--@const` tables: `local NAME = { key = literal, ... }` right after the marker. */
function findConstTables(tokens: Token[], file: string): ConstTable[] {
  const tables: ConstTable[] = [];
  tokens.forEach((t, i) => {
    const marker = t.kind === 'comment' ? t.text.trim() : '';
    if (marker !== '--@const' && marker !== '--@const export') return;
    const code = codeIndexes(tokens).filter((j) => j > i);
    const at = (k: number) => tokens[code[k]!];
    if (at(0)?.text !== 'local' || at(1)?.kind !== 'name' || at(2)?.text !== '=' || at(3)?.text !== '{') {
      throw new LuaCompileError(`${file}:${t.line}: --@const must precede "local NAME = {"`);
    }
    const name = at(1)!.text;
    const fields = new Map<string, string>();
    let k = 4;
    while (at(k)?.text !== '}') {
      const key = at(k);
      const eq = at(k + 1);
      const value = at(k + 2);
      if (key?.kind !== 'name' || eq?.text !== '=' || (value?.kind !== 'string' && value?.kind !== 'number')) {
        throw new LuaCompileError(`${file}:${key?.line ?? t.line}: a --@const table holds only name = 'string' or number entries`);
      }
      if (fields.has(key.text)) throw new LuaCompileError(`${file}:${key.line}: ${name}.${key.text} is set twice`);
      fields.set(key.text, value.text);
      k += 3;
      if (at(k)?.text === ',') k++;
    }
    const constructor = `{ ${[...fields].map(([f, v]) => `${f} = ${v}`).join(', ')} }`;
    tables.push({ name, exported: marker === '--@const export', fields, constructor, from: i, to: code[k]! });
  });
  return tables;
}

const OPENERS = new Set(['function', 'if', 'do', 'repeat']);
const CLOSERS = new Set(['end', 'until']);

interface FunctionSpan {
  name: string;
  /** Token range [from, to]: from `local` to the matching `end`. */
  from: number;
  to: number;
  /** Marked `--@rare` on the line above: a path most runs of the script never take. */
  rare: boolean;
  /** Index of the `)` that closes the parameter list. */
  bodyStart: number;
}

/** Top-level `local function NAME` definitions with their extent. */
function topLevelFunctions(tokens: Token[], file: string): FunctionSpan[] {
  const code = codeIndexes(tokens);
  const spans: FunctionSpan[] = [];
  let depth = 0;
  for (let c = 0; c < code.length; c++) {
    const t = tokens[code[c]!]!;
    if (t.kind !== 'name') continue;
    if (depth === 0 && t.text === 'local' && tokens[code[c + 1]!]?.text === 'function') {
      const name = tokens[code[c + 2]!]!.text;
      let d = 0;
      let e = c + 1;
      for (; e < code.length; e++) {
        const w = tokens[code[e]!]!;
        if (w.kind !== 'name') continue;
        if (OPENERS.has(w.text)) d++;
        else if (CLOSERS.has(w.text)) d--;
        if (d === 0) break;
      }
      if (e >= code.length) throw new LuaCompileError(`${file}:${t.line}: function ${name} has no end`);
      let close = c + 3;
      while (close < e && tokens[code[close]!]!.text !== ')') close++;
      let before = code[c]! - 1;
      while (before >= 0 && (tokens[before]!.kind === 'space' || tokens[before]!.kind === 'newline')) before--;
      const rare = before >= 0 && tokens[before]!.kind === 'comment' && tokens[before]!.text.trim() === '--@rare';
      spans.push({ name, from: code[c]!, to: code[e]!, rare, bodyStart: code[close]! });
      c = e;
      continue;
    }
    if (OPENERS.has(t.text)) depth++;
    else if (CLOSERS.has(t.text)) depth--;
  }
  return spans;
}

/**
 * Moves each top-level helper that is used only inside one `--@rare` function into that
 * function's body, until none moves. What moved in is itself part of the rare path, so its own
 * helpers may follow it. A `--@rare` function is never moved into another: each rare path
 * keeps its own helpers, so their variants stay apart.
 */
function sinkIntoRare(input: Token[], file: string): Token[] {
  let tokens = input;
  for (;;) {
    const spans = topLevelFunctions(tokens, file);
    const move = spans.flatMap((helper) => {
      const users = new Set<FunctionSpan>();
      let outside = false;
      tokens.forEach((t, i) => {
        if (t.kind !== 'name' || t.text !== helper.name || (i >= helper.from && i <= helper.to)) return;
        const user = spans.find((s) => i >= s.from && i <= s.to);
        if (user) users.add(user);
        else outside = true;
      });
      const [only] = [...users];
      // A rare path stays a function of its own: its helpers go into it, not it into another.
      return !outside && users.size === 1 && only!.rare && !helper.rare ? [{ helper, into: only! }] : [];
    })[0];
    if (!move) return tokens;
    const { helper, into } = move;
    const moved = tokens.slice(helper.from, helper.to + 1);
    const newline: Token = { kind: 'newline', text: '\n', line: moved[0]!.line };
    tokens = tokens.flatMap((t, i) => {
      if (i >= helper.from && i <= helper.to) return [];
      return i === into.bodyStart ? [t, newline, ...moved, newline] : [t];
    });
  }
}

/**
 * The `--@const export` tables of a Lua file, as { name: { field: value } }, so TypeScript reads
 * the positions and names the scripts use from the same source.
 */
export function exportedConstants(source: string, file = 'lib'): Record<string, Record<string, string | number>> {
  const out: Record<string, Record<string, string | number>> = {};
  for (const table of findConstTables(tokenize(source, file), file)) {
    if (!table.exported) continue;
    out[table.name] = Object.fromEntries([...table.fields].map(([field, value]) => [field, /^['"]/.test(value) ? value.slice(1, -1) : Number(value)]));
  }
  return out;
}

export interface CompileOptions {
  /**
   * Move each helper that only a `--@rare` function uses into it (default true). A script run
   * by EVALSHA makes its top-level helpers' closures on every call; a function library makes
   * them once, at FUNCTION LOAD, so it keeps them at the top.
   */
  sinkRare?: boolean;
  /**
   * Minify (docs/scripts.md#building): lua/lib/'s top-level names by this map, every other
   * local by its scope (src/scripts/minify.ts), and no space where none is needed. Lines stay
   * as they are, so a line of the shipped text is a line of the readable one.
   */
  rename?: ReadonlyMap<string, string>;
}

/** Compiled code as lines, each with the line of the resolved source where it starts. */
export interface CompiledLines {
  lines: string[];
  from: number[];
}

/** Compiles a resolved script (includes already inlined) into its shipped text. */
export function compileLua(source: string, file = 'script', options?: CompileOptions): string {
  return `${compileLuaLines(source, file, options).lines.join('\n')}\n`;
}

/** compileLua's lines, each with where it came from (so the build can tell helpers from a body). */
export function compileLuaLines(source: string, file = 'script', options: CompileOptions = {}): CompiledLines {
  let tokens = tokenize(source, file);

  // 1. Constant tables: drop the declarations, then replace every use.
  const tables = findConstTables(tokens, file);
  const byName = new Map(tables.map((t) => [t.name, t]));
  const dropped = new Set<number>();
  for (const t of tables) for (let i = t.from; i <= t.to; i++) dropped.add(i);
  const expanded: Token[] = [];
  let previous: Token | undefined;
  for (let i = 0; i < tokens.length; i++) {
    if (dropped.has(i)) continue;
    const t = tokens[i]!;
    const table = t.kind === 'name' ? byName.get(t.text) : undefined;
    const afterDot = previous?.text === '.' || previous?.text === ':';
    if (t.kind !== 'space' && t.kind !== 'newline' && t.kind !== 'comment') previous = t;
    if (!table || afterDot) {
      expanded.push(t);
      continue;
    }
    if (tokens[i + 1]?.text === '.' && tokens[i + 2]?.kind === 'name') {
      const field = tokens[i + 2]!.text;
      const value = table.fields.get(field);
      if (value === undefined) throw new LuaCompileError(`${file}:${t.line}: ${table.name} has no field ${field}`);
      expanded.push({ kind: value.startsWith("'") || value.startsWith('"') ? 'string' : 'number', text: value, line: t.line });
      i += 2;
    } else {
      for (const c of tokenize(`(${table.constructor})`, file)) expanded.push({ ...c, line: t.line });
    }
  }
  tokens = expanded;

  // 2. Unused top-level helpers, until none is left (a dropped helper may free another).
  for (;;) {
    const spans = topLevelFunctions(tokens, file);
    const unused = spans.find((span) => {
      for (let i = 0; i < tokens.length; i++) {
        if (i >= span.from && i <= span.to) continue;
        const t = tokens[i]!;
        if (t.kind === 'name' && t.text === span.name) return false;
      }
      return true;
    });
    if (!unused) break;
    tokens = tokens.filter((_, i) => i < unused.from || i > unused.to);
  }

  // 3. Rare paths: a helper that only a `--@rare` function uses moves inside it, so its
  // closure is made only when that path is taken (Lua makes a top-level function's closure on
  // every run of the script).
  if (options.sinkRare !== false) tokens = sinkIntoRare(tokens, file);

  // 4. Short names, when asked.
  const { rename } = options;
  if (rename) renameLocals(tokens, rename, file);

  // 5. Lines of code only: no comments, no blank lines, no indentation (minified: a space only
  // where two tokens would otherwise run together).
  const lines: string[] = [];
  const from: number[] = [];
  let current = '';
  let line = 0;
  let last: Token | undefined;
  const flush = () => {
    const text = current.trim();
    if (text) {
      lines.push(text);
      from.push(line);
    }
    current = '';
    last = undefined;
  };
  for (const t of tokens) {
    if (t.kind === 'comment') continue;
    if (t.kind === 'newline') flush();
    else if (t.kind === 'space') {
      if (!rename) current += current && !current.endsWith(' ') ? ' ' : '';
    } else {
      if (!current) line = t.line;
      if (rename && last && needsSpace(last, t, tokenize)) current += ' ';
      current += t.text;
      last = t;
    }
  }
  flush();
  return { lines, from };
}

/**
 * The names a lib/ file declares at its top level (`local function f`, `local a, b`), constant
 * tables aside, and how often each name of the file is used (fields after "." or ":" aside):
 * what the build's one map of helper names is made from (src/scripts/minify.ts).
 */
export function topLevelNames(source: string, file = 'lib'): { declared: string[]; uses: Map<string, number> } {
  const tokens = tokenize(source, file);
  const constants = new Set(findConstTables(tokens, file).map((t) => t.name));
  const code = codeIndexes(tokens).map((i) => tokens[i]!);
  const declared: string[] = [];
  const uses = new Map<string, number>();
  let depth = 0;
  code.forEach((t, i) => {
    if (t.kind !== 'name') return;
    if (code[i - 1]?.text !== '.' && code[i - 1]?.text !== ':') uses.set(t.text, (uses.get(t.text) ?? 0) + 1);
    if (OPENERS.has(t.text)) depth++;
    else if (CLOSERS.has(t.text)) depth--;
    else if (t.text === 'local' && depth === 0) {
      let j = code[i + 1]?.text === 'function' ? i + 2 : i + 1;
      const names = [code[j]!.text];
      while (code[j + 1]?.text === ',' && code[j + 2]?.kind === 'name') names.push(code[(j += 2)]!.text);
      declared.push(...names.filter((n) => !constants.has(n)));
    }
  });
  return { declared, uses };
}
