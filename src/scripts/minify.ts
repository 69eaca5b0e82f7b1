/**
 * Build-time renaming of shipped Lua (docs/scripts.md#building): short names for what only the
 * code itself sees, so the package carries less text. Two kinds of name are renamed:
 *   - the top-level names of lua/lib/ (helpers, constants), by one map for the whole build
 *     (`helperNames`): a helper keeps one text in every script and in the function library,
 *     which join the same compiled statements. They get names that start upper case.
 *   - every other local and parameter, by its scope: the first lower-case name that no local
 *     visible where it is declared has, so sibling scopes reuse the same short names.
 * Never renamed: keywords, the globals Redis gives scripts (redis, KEYS, ARGV, string, ...),
 * a field after `.` or `:`, a table constructor's `name =` key, and anything inside a string.
 * A small Lua 5.1 parser finds what each name is; the text between names is left to the caller.
 */
import { LuaCompileError } from './luaCompileError.ts';

/** A lexed token, as compile.ts makes them. */
export interface MinifyToken {
  kind: 'name' | 'number' | 'string' | 'comment' | 'symbol' | 'newline' | 'space';
  text: string;
  line: number;
}

export const LUA_KEYWORDS = new Set([
  'and',
  'break',
  'do',
  'else',
  'elseif',
  'end',
  'false',
  'for',
  'function',
  'if',
  'in',
  'local',
  'nil',
  'not',
  'or',
  'repeat',
  'return',
  'then',
  'true',
  'until',
  'while',
]);

/** The globals of Redis's Lua 5.1 (its libraries and base functions) and `self`: never renamed, never given. */
export const LUA_GLOBALS = new Set([
  '_G',
  '_VERSION',
  'assert',
  'collectgarbage',
  'dofile',
  'error',
  'gcinfo',
  'getfenv',
  'getmetatable',
  'ipairs',
  'load',
  'loadfile',
  'loadstring',
  'module',
  'newproxy',
  'next',
  'pairs',
  'pcall',
  'print',
  'rawequal',
  'rawget',
  'rawset',
  'require',
  'select',
  'setfenv',
  'setmetatable',
  'tonumber',
  'tostring',
  'type',
  'unpack',
  'xpcall',
  'string',
  'table',
  'math',
  'os',
  'io',
  'coroutine',
  'debug',
  'package',
  'redis',
  'cjson',
  'cmsgpack',
  'bit',
  'struct',
  'KEYS',
  'ARGV',
  'self',
]);

const TAIL = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_';

/** The n-th name (0-based) whose first character is one of `heads`, shortest first, skipping reserved words. */
function nthName(heads: string, n: number, skip: (name: string) => boolean): string {
  for (let i = 0, seen = 0; ; i++) {
    let name: string;
    if (i < heads.length) name = heads[i]!;
    else {
      const k = i - heads.length;
      if (k >= heads.length * TAIL.length) throw new LuaCompileError('more names than two characters give');
      name = heads[Math.floor(k / TAIL.length)]! + TAIL[k % TAIL.length]!;
    }
    if (skip(name)) continue;
    if (seen++ === n) return name;
  }
}

const reserved = (name: string) => LUA_KEYWORDS.has(name) || LUA_GLOBALS.has(name);

/**
 * The build's one map for lua/lib/'s top-level names: the most used name gets the shortest
 * name. `uses` counts each name's uses over every Lua file, so the map depends on lua/ only.
 */
export function helperNames(names: Iterable<string>, uses: ReadonlyMap<string, number>): Map<string, string> {
  const sorted = [...new Set(names)].filter((n) => !reserved(n)).sort((a, b) => (uses.get(b) ?? 0) - (uses.get(a) ?? 0) || (a < b ? -1 : a > b ? 1 : 0));
  return new Map(sorted.map((name, i) => [name, nthName('ABCDEFGHIJKLMNOPQRSTUVWXYZ', i, reserved)]));
}

const LOCAL_HEADS = 'abcdefghijklmnopqrstuvwxyz';
const localNames: string[] = [];
function localName(n: number): string {
  while (localNames.length <= n) localNames.push(nthName(LOCAL_HEADS, localNames.length, reserved));
  return localNames[n]!;
}

interface Declaration {
  name: string;
  /** Its new name; the same as name when it is not renamed. */
  short: string;
}

class Scope {
  readonly vars = new Map<string, Declaration>();
  readonly parent: Scope | undefined;
  /**
   * The body of a lib/ helper: nothing in it refers to a local around it, so its locals are
   * named as at the top level, and a helper moved into a rare path keeps its text.
   */
  readonly fresh: boolean;

  constructor(parent?: Scope, fresh = false) {
    this.parent = parent;
    this.fresh = fresh;
  }

  lookup(name: string): { declaration: Declaration; scope: Scope } | undefined {
    for (let s: Scope | undefined = this; s; s = s.parent) {
      const declaration = s.vars.get(name);
      if (declaration) return { declaration, scope: s };
    }
    return undefined;
  }

  /** The new names of the locals visible here that a new local must not take. */
  taken(): Set<string> {
    const out = new Set<string>();
    for (let s: Scope | undefined = this; s; s = s.parent) {
      for (const d of s.vars.values()) out.add(d.short);
      if (s.fresh) break;
    }
    return out;
  }

  /** Whether a new name, read here, finds the declaration it stands for (and not another one that took that name). */
  finds(declaration: Declaration, at: Scope): boolean {
    for (let s: Scope | undefined = this; s; s = s.parent) {
      for (const d of s.vars.values()) if (d.short === declaration.short && d !== declaration) return false;
      if (s === at) return true;
    }
    return false;
  }
}

const BINARY = new Set(['+', '-', '*', '/', '%', '^', '..', '==', '~=', '<', '<=', '>', '>=', 'and', 'or']);
const UNARY = new Set(['-', 'not', '#']);
const BLOCK_END = new Set(['end', 'else', 'elseif', 'until']);

/**
 * Renames the names of `tokens` in place: `helpers` maps lib/ top-level names, the rest are
 * renamed by scope. Throws on a name that is neither declared nor a Redis global (Redis would
 * refuse it at run time) and on code it cannot parse.
 */
export function renameLocals(tokens: MinifyToken[], helpers: ReadonlyMap<string, string>, file: string): void {
  const code = tokens.filter((t) => t.kind !== 'space' && t.kind !== 'newline' && t.kind !== 'comment');
  let at = 0;
  let scope = new Scope();
  const peek = (k = 0) => code[at + k];
  const isWord = (t: MinifyToken | undefined, word: string) => t !== undefined && t.text === word && (t.kind === 'name' || t.kind === 'symbol');
  const fail = (what: string): never => {
    const t = peek();
    throw new LuaCompileError(`${file}:${t?.line ?? '?'}: ${what}${t ? ` at "${t.text}"` : ' at the end'}`);
  };
  const expect = (word: string) => {
    if (!isWord(peek(), word)) fail(`expected "${word}"`);
    at++;
  };
  const isName = (t: MinifyToken | undefined) => t?.kind === 'name' && !LUA_KEYWORDS.has(t.text);
  const name = (): MinifyToken => {
    const t = peek();
    if (!isName(t)) fail('expected a name');
    at++;
    return t!;
  };

  const declare = (t: MinifyToken, into: Scope = scope) => {
    const helper = helpers.get(t.text);
    let short = t.text;
    if (helper !== undefined) short = helper;
    else if (!reserved(t.text)) {
      const taken = into.taken();
      let n = 0;
      while (taken.has(localName(n))) n++;
      short = localName(n);
    }
    into.vars.set(t.text, { name: t.text, short });
    t.text = short;
  };
  const reference = (t: MinifyToken) => {
    const helper = helpers.get(t.text);
    const found = scope.lookup(t.text);
    if (found) {
      if (!scope.finds(found.declaration, found.scope)) throw new LuaCompileError(`${file}:${t.line}: renamed, ${t.text} would read another local`);
      t.text = found.declaration.short;
    } else if (helper !== undefined) t.text = helper;
    else if (!LUA_GLOBALS.has(t.text)) throw new LuaCompileError(`${file}:${t.line}: ${t.text} is neither a local nor a global Redis gives scripts`);
  };
  const open = (fresh = false) => {
    scope = new Scope(scope, fresh);
  };
  const close = () => {
    scope = scope.parent!;
  };

  const block = () => {
    while (peek() && !(peek()!.kind === 'name' && BLOCK_END.has(peek()!.text))) {
      if (isWord(peek(), 'return')) {
        at++;
        if (peek() && !isWord(peek(), ';') && !(peek()!.kind === 'name' && BLOCK_END.has(peek()!.text))) expressions();
        if (isWord(peek(), ';')) at++;
        return;
      }
      statement();
      if (isWord(peek(), ';')) at++;
    }
  };
  const scopedBlock = () => {
    open();
    block();
    close();
  };

  const statement = () => {
    const t = peek()!;
    const word = t.kind === 'name' ? t.text : '';
    if (word === 'if') {
      at++;
      expression();
      expect('then');
      scopedBlock();
      while (isWord(peek(), 'elseif')) {
        at++;
        expression();
        expect('then');
        scopedBlock();
      }
      if (isWord(peek(), 'else')) {
        at++;
        scopedBlock();
      }
      expect('end');
    } else if (word === 'while') {
      at++;
      expression();
      expect('do');
      scopedBlock();
      expect('end');
    } else if (word === 'do') {
      at++;
      scopedBlock();
      expect('end');
    } else if (word === 'for') {
      at++;
      const vars = [name()];
      if (isWord(peek(), '=')) {
        at++;
        expressions();
      } else {
        while (isWord(peek(), ',')) {
          at++;
          vars.push(name());
        }
        expect('in');
        expressions();
      }
      expect('do');
      open();
      for (const v of vars) declare(v);
      block();
      close();
      expect('end');
    } else if (word === 'repeat') {
      at++;
      open();
      block();
      expect('until');
      expression();
      close();
    } else if (word === 'function') {
      at++;
      reference(name());
      let method = false;
      while (isWord(peek(), '.') || isWord(peek(), ':')) {
        method = peek()!.text === ':';
        at++;
        name();
        if (method) break;
      }
      functionBody(method);
    } else if (word === 'local') {
      at++;
      if (isWord(peek(), 'function')) {
        at++;
        const f = name();
        const helper = helpers.has(f.text);
        declare(f);
        functionBody(false, helper);
      } else {
        const vars = [name()];
        while (isWord(peek(), ',')) {
          at++;
          vars.push(name());
        }
        if (isWord(peek(), '=')) {
          at++;
          expressions();
        }
        for (const v of vars) declare(v);
      }
    } else if (word === 'break') {
      at++;
    } else {
      suffixed();
      if (isWord(peek(), '=') || isWord(peek(), ',')) {
        while (isWord(peek(), ',')) {
          at++;
          suffixed();
        }
        expect('=');
        expressions();
      }
    }
  };

  const functionBody = (method: boolean, fresh = false) => {
    expect('(');
    open(fresh);
    if (method) scope.vars.set('self', { name: 'self', short: 'self' });
    while (!isWord(peek(), ')')) {
      if (isWord(peek(), '...')) at++;
      else declare(name());
      if (isWord(peek(), ',')) at++;
      else break;
    }
    expect(')');
    block();
    close();
    expect('end');
  };

  const expressions = () => {
    expression();
    while (isWord(peek(), ',')) {
      at++;
      expression();
    }
  };

  const expression = () => {
    while (peek() && UNARY.has(peek()!.text) && peek()!.kind !== 'string') at++;
    simple();
    while (peek() && BINARY.has(peek()!.text) && peek()!.kind !== 'string') {
      at++;
      while (peek() && UNARY.has(peek()!.text) && peek()!.kind !== 'string') at++;
      simple();
    }
  };

  const simple = () => {
    const t = peek();
    if (!t) return fail('expected an expression');
    if (t.kind === 'number' || t.kind === 'string' || isWord(t, 'nil') || isWord(t, 'true') || isWord(t, 'false') || isWord(t, '...')) at++;
    else if (isWord(t, '{')) table();
    else if (isWord(t, 'function')) {
      at++;
      functionBody(false);
    } else suffixed();
  };

  const suffixed = () => {
    const t = peek();
    if (isWord(t, '(')) {
      at++;
      expression();
      expect(')');
    } else if (isName(t)) {
      at++;
      reference(t!);
    } else fail('expected a name or "("');
    for (;;) {
      const s = peek();
      if (isWord(s, '.')) {
        at++;
        name();
      } else if (isWord(s, '[')) {
        at++;
        expression();
        expect(']');
      } else if (isWord(s, ':')) {
        at++;
        name();
        args();
      } else if (isWord(s, '(') || isWord(s, '{') || s?.kind === 'string') args();
      else return;
    }
  };

  const args = () => {
    const t = peek();
    if (t?.kind === 'string') at++;
    else if (isWord(t, '{')) table();
    else {
      expect('(');
      if (!isWord(peek(), ')')) expressions();
      expect(')');
    }
  };

  const table = () => {
    expect('{');
    while (!isWord(peek(), '}')) {
      if (isWord(peek(), '[')) {
        at++;
        expression();
        expect(']');
        expect('=');
        expression();
      } else if (isName(peek()) && isWord(peek(1), '=')) {
        at += 2;
        expression();
      } else expression();
      if (isWord(peek(), ',') || isWord(peek(), ';')) at++;
      else break;
    }
    expect('}');
  };

  block();
  if (at < code.length) fail('unexpected token');
}

/** Whether two tokens written side by side would lex as other tokens: then a space goes between. */
export function needsSpace(left: MinifyToken, right: MinifyToken, lex: (text: string) => MinifyToken[]): boolean {
  const word = /[A-Za-z0-9_]/;
  if (word.test(left.text.at(-1)!) && word.test(right.text[0]!)) return true;
  // Lua reads a numeral greedily (digits, letters, dots): `1 ..x` keeps its space.
  if (left.kind === 'number' && /[A-Za-z0-9_.]/.test(right.text[0]!)) return true;
  const both = lex(left.text + right.text).filter((t) => t.kind !== 'space');
  return both.length !== 2 || both[0]!.text !== left.text || both[1]!.text !== right.text;
}
