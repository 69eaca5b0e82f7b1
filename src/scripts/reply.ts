/**
 * The readers the generated decoders use (src/scripts/generated/, from each header's
 * `Returns:` lines): one element of a Lua reply to its declared
 * type. Lua sends numbers as integers and strings as strings; an attribute a record does not
 * store is 0 or ''.
 */
import type { Code } from './generated/codes.ts';
import { CODE } from './generated/codes.ts';

const CODES = new Set<unknown>(Object.values(CODE));

function isCode(value: unknown): value is Code {
  return CODES.has(value);
}

/** A reply that is not what its header declares: a bug of the build, never the caller's. */
export class ReplyShapeError extends Error {
  override readonly name = 'ReplyShapeError';
}

/** The reply's result code (its first element). */
export function codeOf(value: unknown): Code {
  if (isCode(value)) return value;
  throw new ReplyShapeError(`A script answered the unknown code ${String(value)}`);
}

export function int(value: unknown): number {
  return typeof value === 'number' ? value : Number(value ?? 0);
}

export function text(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
}

export function flag(value: unknown): boolean {
  return value === 1 || value === '1';
}

export function oneOf<T extends string>(value: unknown, values: readonly T[]): T {
  const s = text(value);
  for (const v of values) if (v === s) return v;
  throw new ReplyShapeError(`A script answered "${s}" where one of ${values.join(', ')} was declared`);
}

/** JSON text, parsed: a record of variable length, which its reader checks. */
export function json(value: unknown): unknown {
  return JSON.parse(text(value));
}

/** A field of a parsed JSON object (undefined when it is not an object). */
export function field(object: unknown, name: string): unknown {
  return typeof object === 'object' && object !== null ? Reflect.get(object, name) : undefined;
}

/** Whether an optional element is there: not absent, not '' and not an empty table. */
export function present(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '' && !(Array.isArray(value) && value.length === 0);
}

/** A nested table of a reply (an empty list for anything else, e.g. cjson's {} or ''). */
export function list(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The rest of a reply from `from` on, in groups of `size`, each made by `make(at)`. */
export function groups<T>(reply: readonly unknown[], from: number, size: number, make: (at: number) => T): T[] {
  const out: T[] = [];
  for (let at = from; at + size <= reply.length; at += size) out.push(make(at));
  return out;
}
