/**
 * Canonical JSON per RFC 8785 (JCS): the same value always gives the same text, so request
 * bodies can be compared by fingerprint (SPEC §7). Object members are sorted by their names'
 * UTF-16 code units, numbers and strings are written as ECMAScript's JSON.stringify writes
 * them (so 1e21 is "1e+21", -0 is "0" and 4.5e-7 is "4.5e-7"), and there is no whitespace.
 *
 * What JSON.stringify would change silently is refused with InvalidInputError instead, so that
 * two different values never share a text: BigInt, functions, symbols, NaN and the
 * infinities, strings that are not well-formed UTF-16 (lone surrogates, not I-JSON), cycles,
 * `undefined` anywhere but as an object member (such a member is left out, as JSON.stringify
 * does), and objects that are neither plain objects, arrays, boxed primitives nor values with
 * a `toJSON` (a Map or a Set would all read `{}`). `toJSON` is honoured as JSON.stringify
 * honours it: a Date is its ISO string. Nesting deeper than `maxDepth` (default 256) is
 * refused before the call stack is at risk.
 */
import { InvalidInputError } from "./errors.ts";

export const CANONICAL_JSON_MAX_DEPTH = 256;

/** In `u` mode a surrogate pair is one code point, so this finds only lone surrogates. */
const LONE_SURROGATE = /\p{Surrogate}/u;

export interface CanonicalJsonOptions {
  /** Arrays and objects nested deeper than this are refused. Default 256. */
  maxDepth?: number;
}

export function canonicalJson(value: unknown, options: CanonicalJsonOptions = {}): string {
  const maxDepth = options.maxDepth ?? CANONICAL_JSON_MAX_DEPTH;
  if (!Number.isSafeInteger(maxDepth) || maxDepth < 1) throw new InvalidInputError("maxDepth must be a whole number >= 1");
  const open = new Set<object>();

  const write = (input: unknown, key: string, path: string, depth: number): string | undefined => {
    let v = input;
    if (v !== null && (typeof v === "object" || typeof v === "bigint")) {
      const toJSON = (v as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === "function") v = toJSON.call(v, key);
    }
    if (v instanceof Number || v instanceof String || v instanceof Boolean) v = v.valueOf();
    switch (typeof v) {
      case "string":
        if (LONE_SURROGATE.test(v)) throw refuse(path, "a string with a lone surrogate (not well-formed UTF-16)");
        return JSON.stringify(v);
      case "number":
        if (!Number.isFinite(v)) throw refuse(path, String(v));
        return JSON.stringify(v);
      case "boolean":
        return v ? "true" : "false";
      case "undefined":
        return undefined;
      case "bigint":
        throw refuse(path, "a BigInt");
      case "function":
        throw refuse(path, "a function");
      case "symbol":
        throw refuse(path, "a symbol");
    }
    if (v === null) return "null";
    const object = v as object;
    if (open.has(object)) throw refuse(path, "a cycle");
    if (depth >= maxDepth) throw new InvalidInputError(`JSON nested deeper than ${maxDepth} levels at ${path}`);
    open.add(object);
    let text: string;
    if (Array.isArray(object)) {
      const items: string[] = [];
      for (let i = 0; i < object.length; i++) {
        const item = write(object[i], String(i), `${path}[${i}]`, depth + 1);
        if (item === undefined) throw refuse(`${path}[${i}]`, "undefined");
        items.push(item);
      }
      text = `[${items.join(",")}]`;
    } else {
      const proto = Object.getPrototypeOf(object) as unknown;
      if (proto !== Object.prototype && proto !== null) throw refuse(path, `a ${object.constructor?.name ?? "non-plain"} object`);
      // Array.prototype.sort compares strings by UTF-16 code units, as RFC 8785 §3.2.3 asks.
      const names = Object.keys(object).sort();
      const members: string[] = [];
      for (const name of names) {
        const member = write((object as Record<string, unknown>)[name], name, `${path}.${name}`, depth + 1);
        if (member === undefined) continue;
        if (LONE_SURROGATE.test(name)) throw refuse(`${path}.${name}`, "a member name with a lone surrogate (not well-formed UTF-16)");
        members.push(`${JSON.stringify(name)}:${member}`);
      }
      text = `{${members.join(",")}}`;
    }
    open.delete(object);
    return text;
  };

  const text = write(value, "", "$", 0);
  if (text === undefined) throw refuse("$", "undefined");
  return text;
}

function refuse(path: string, what: string): InvalidInputError {
  return new InvalidInputError(`Not a JSON value at ${path.length > 200 ? `${path.slice(0, 200)}…` : path}: ${what}`);
}
