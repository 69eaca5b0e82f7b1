/**
 * Resolves the `--@include "path"` directives of the Lua sources (shared helpers in
 * lua/lib/). Each file is included once, helpers before the code that uses them, and a
 * missing file or an include cycle is reported with the file and line that asked for it.
 * Pure: the caller supplies how to read a file, so the same code serves the build step and
 * the tests.
 */
import { posix } from "node:path";

const INCLUDE = /^--@include\s+"([^"]+)"\s*$/;

export class LuaIncludeError extends Error {
  override readonly name = "LuaIncludeError";
}

/** Reads a file by its path relative to the Lua root, or returns undefined if it is absent. */
export type ReadLua = (path: string) => string | undefined;

export function resolveIncludes(entry: string, read: ReadLua): string {
  return resolveIncludeChunks(entry, read).map((chunk) => chunk.text).join("\n");
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
    source.split("\n").forEach((line, index) => {
      const match = INCLUDE.exec(line.trim());
      if (!match) {
        body.push(line);
        return;
      }
      const target = posix.normalize(posix.join(posix.dirname(path), match[1]!));
      const at = `${path}:${index + 1}`;
      const loopStart = [...open, path].indexOf(target);
      if (loopStart >= 0) {
        const loop = [...via, at].slice(loopStart).join(" -> ");
        throw new LuaIncludeError(`include cycle: ${loop} -> ${target}`);
      }
      if (included.has(target)) return;
      visit(target, [...open, path], [...via, at]);
      included.add(target);
    });
    chunks.push({ path, text: `-- ${path}\n${body.join("\n").trim()}\n` });
  };

  visit(entry, [], []);
  return chunks;
}

export interface LuaParam {
  index: number;
  name: string;
  /** The word after the name: integer, string, hash, 'a'|'b', ... */
  type: string;
}

export interface LuaHeader {
  name: string;
  keys: LuaParam[];
  args: LuaParam[];
}

/**
 * Reads the header block of a script: its name, then one `KEYS[n] name ...` or
 * `ARGV[n] name ...` line per key and argument (BullMQ-style headers).
 */
export function parseHeader(source: string, file: string): LuaHeader {
  const open = source.indexOf("--[[");
  const close = source.indexOf("]]", open);
  if (open !== 0 || close < 0) {
    throw new LuaIncludeError(`${file}: a script must open with a --[[ header ]]`);
  }
  const lines = source.slice(4, close).split("\n").map((l) => l.trim()).filter(Boolean);
  const title = /^(\w+):/.exec(lines[0] ?? "");
  if (!title) throw new LuaIncludeError(`${file}: the header must start with "<name>: <summary>"`);
  const keys: LuaParam[] = [];
  const args: LuaParam[] = [];
  for (const line of lines) {
    const m = /^(KEYS|ARGV)\[(\d+)\]\s+(\w+)\s*(\S*)/.exec(line);
    if (!m) continue;
    const list = m[1] === "KEYS" ? keys : args;
    const index = Number(m[2]);
    if (index !== list.length + 1) {
      throw new LuaIncludeError(`${file}: ${m[1]}[${index}] is out of order in the header`);
    }
    list.push({ index, name: m[3]!, type: m[4] ?? "" });
  }
  return { name: title[1]!, keys, args };
}
