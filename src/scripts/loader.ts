/**
 * Resolves the `--@include "path"` directives of the Lua sources (shared helpers in
 * lua/lib/). Each file is included once, helpers before the code that uses them, and a
 * missing file or an include cycle is reported with the file and line that asked for it.
 * Pure: the caller supplies how to read a file, so the same code serves the build step and
 * the tests.
 */
import { posix } from 'node:path';
import { parseForms, parseReturns, type ReplyField, type ReplyShape } from './replyGrammar.ts';

const INCLUDE = /^--@include\s+"([^"]+)"\s*$/;

export class LuaIncludeError extends Error {
  override readonly name = 'LuaIncludeError';
}

/** Reads a file by its path relative to the Lua root, or returns undefined if it is absent. */
export type ReadLua = (path: string) => string | undefined;

export function resolveIncludes(entry: string, read: ReadLua): string {
  return resolveIncludeChunks(entry, read)
    .map((chunk) => chunk.text)
    .join('\n');
}

/** One file of a resolved script: its path and its text without the include lines. */
export interface LuaChunk {
  path: string;
  text: string;
}

/**
 * The files of a resolved script in order, each once: the helpers it includes, helpers
 * before the code that uses them, then the entry itself, last. resolveIncludes joins them.
 */
export function resolveIncludeChunks(entry: string, read: ReadLua): LuaChunk[] {
  const included = new Set<string>();
  const chunks: LuaChunk[] = [];

  // open: files being read, outermost first; via: the include line that opened each of them.
  const visit = (path: string, open: string[], via: string[]): void => {
    const source = read(path);
    if (source === undefined) {
      throw new LuaIncludeError(`${via.at(-1) ?? path}: include not found: ${path}`);
    }
    const body: string[] = [];
    source.split('\n').forEach((line, index) => {
      const match = INCLUDE.exec(line.trim());
      if (!match) {
        body.push(line);
        return;
      }
      const target = posix.normalize(posix.join(posix.dirname(path), match[1]!));
      const at = `${path}:${index + 1}`;
      const loopStart = [...open, path].indexOf(target);
      if (loopStart >= 0) {
        const loop = [...via, at].slice(loopStart).join(' -> ');
        throw new LuaIncludeError(`include cycle: ${loop} -> ${target}`);
      }
      if (included.has(target)) return;
      visit(target, [...open, path], [...via, at]);
      included.add(target);
    });
    chunks.push({ path, text: `-- ${path}\n${body.join('\n').trim()}\n` });
  };

  visit(entry, [], []);
  return chunks;
}

export interface LuaParam {
  index: number;
  name: string;
  /** `KEYS[n...]`: the last key is a list of any length (n and on), passed as an array. */
  rest?: boolean;
  /** The word after the name: integer, string, hash, 'a'|'b', ... */
  type: string;
}

export interface LuaHeader {
  name: string;
  keys: LuaParam[];
  args: LuaParam[];
  /** Its `Returns:` declarations. */
  returns: ReplyShape[];
}

/** The lines of a file's opening --[[ header ]], trimmed, without blank ones. */
function headerLines(source: string, file: string): string[] {
  const open = source.indexOf('--[[');
  const close = source.indexOf(']]', open);
  if (open !== 0 || close < 0) {
    throw new LuaIncludeError(`${file}: a script must open with a --[[ header ]]`);
  }
  return source
    .slice(4, close)
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

/** The reply forms a lib/ file's header declares (`Reply form <name>: {...}`). */
export function parseLibForms(source: string, file: string): Map<string, ReplyField[]> {
  return source.startsWith('--[[') ? parseForms(headerLines(source, file), file) : new Map();
}

/**
 * The shared layouts of lib/prologue.lua, by the name a header's `Layout:` line gives: the
 * keys and arguments every script of that kind starts with, at the same positions.
 */
export const LAYOUTS: Readonly<Record<string, { keys: ReadonlyArray<readonly [string, string]>; args: ReadonlyArray<readonly [string, string]> }>> = {
  look: { keys: [['account', 'hash']], args: [['nowMs', 'integer']] },
  movement: {
    keys: [
      ['account', 'hash'],
      ['cycles', 'hash'],
      ['journal', 'stream'],
      ['history', 'hash'],
    ],
    args: [
      ['nowMs', 'integer'],
      ['journalTrim', 'string'],
      ['journalBound', 'integer'],
      ['historyDays', 'integer'],
    ],
  },
  holds: {
    keys: [
      ['account', 'hash'],
      ['cycles', 'hash'],
      ['journal', 'stream'],
      ['history', 'hash'],
      ['holdsActive', 'zset'],
      ['holdsEnded', 'zset'],
    ],
    args: [
      ['nowMs', 'integer'],
      ['journalTrim', 'string'],
      ['journalBound', 'integer'],
      ['historyDays', 'integer'],
    ],
  },
  cycle: {
    keys: [
      ['account', 'hash'],
      ['cycles', 'hash'],
    ],
    args: [
      ['nowMs', 'integer'],
      ['journalTrim', 'string'],
      ['journalBound', 'integer'],
      ['historyDays', 'integer'],
    ],
  },
};

/**
 * Reads the header block of a script: its name, then one `KEYS[n] name ...` or
 * `ARGV[n] name ...` line per key and argument (BullMQ-style headers), and its `Returns:`
 * declarations.
 */
export function parseHeader(source: string, file: string): LuaHeader {
  const lines = headerLines(source, file);
  const title = /^(\w+):/.exec(lines[0] ?? '');
  if (!title) throw new LuaIncludeError(`${file}: the header must start with "<name>: <summary>"`);
  const keys: LuaParam[] = [];
  const args: LuaParam[] = [];
  // A `Layout: <name>` line stands for the shared keys and arguments lib/prologue.lua reads.
  const layoutLine = lines.find((line) => line.startsWith('Layout:'));
  if (layoutLine) {
    const name = /^Layout:\s+(\w+)/.exec(layoutLine)?.[1] ?? '';
    const layout = LAYOUTS[name];
    if (!layout) throw new LuaIncludeError(`${file}: unknown layout "${name}" (one of ${Object.keys(LAYOUTS).join(', ')})`);
    layout.keys.forEach(([key, type], i) => {
      keys.push({ index: i + 1, name: key, type });
    });
    layout.args.forEach(([arg, type], i) => {
      args.push({ index: i + 1, name: arg, type });
    });
  }
  for (const line of lines) {
    const m = /^(KEYS|ARGV)\[(\d+)(\.\.\.)?\]\s+(\w+)\s*(\S*)/.exec(line);
    if (!m) continue;
    const list = m[1] === 'KEYS' ? keys : args;
    const index = Number(m[2]);
    if (index !== list.length + 1 || list.at(-1)?.rest) {
      throw new LuaIncludeError(`${file}: ${m[1]}[${index}] is out of order in the header`);
    }
    if (m[3] && m[1] !== 'KEYS') throw new LuaIncludeError(`${file}: only the last of the KEYS may be a list (${m[1]}[${index}...])`);
    list.push({ index, name: m[4]!, type: m[5] ?? '', ...(m[3] ? { rest: true } : {}) });
  }
  return { name: title[1]!, keys, args, returns: parseReturns(lines, file) };
}
