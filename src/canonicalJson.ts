/**
 * Canonical JSON per RFC 8785 (JCS): the same value always gives the same text, so request
 * bodies can be compared by fingerprint. Object members are sorted by their names'
 * UTF-16 code units, numbers and strings are written as ECMAScript's JSON.stringify writes
 * them (so 1e21 is "1e+21", -0 is "0" and 4.5e-7 is "4.5e-7"), and there is no whitespace.
 *
 * What JSON.stringify would change silently is refused with InvalidInputError instead, so that
 * two different values never share a text: BigInt, functions, symbols, NaN and the
 * infinities, strings that are not well-formed UTF-16 (lone surrogates, not I-JSON), cycles,
 * `undefined` anywhere but as an object member (such a member is left out, as JSON.stringify
 * does), and objects that are neither plain objects, arrays nor values with a `toJSON` (a Map
 * or a Set would all read `{}`; a boxed primitive is refused too). `toJSON` is honoured as
 * JSON.stringify honours it: a Date is its ISO string. Nesting deeper than `maxDepth`
 * (default 256) is refused before the call stack is at risk.
 */
import { InvalidInputError } from './errors.ts';

/** In `u` mode a surrogate pair is one code point, so this finds only lone surrogates. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * The RFC 8785 canonical JSON text of a value (what `fingerprint` hashes).
 *
 * @example
 * ```ts
 * canonicalJson({ b: 1, a: [true, 1e21] }); // '{"a":[true,1e+21],"b":1}'
 * ```
 */
export function canonicalJson(value: unknown, options: { maxDepth?: number } = {}): string {
  const { maxDepth = 256 } = options;
  // The arrays and objects being written: the path down to the value, so its size is the depth.
  const open = new Set<object>();
  const refuse = (key: string, what: string) => new InvalidInputError(`Not a JSON value at "${key.slice(0, 64)}": ${what}`);
  const write = (input: unknown, key: string): string | undefined => {
    let v = input as { toJSON?: (key: string) => unknown } | undefined;
    if (v !== null && v !== undefined && typeof v.toJSON === 'function') v = v.toJSON(key) as typeof v;
    if (v === undefined) return undefined;
    if (v === null || typeof v === 'boolean') return String(v);
    if (typeof v === 'number' ? Number.isFinite(v) : typeof v === 'string' && !LONE_SURROGATE.test(v)) return JSON.stringify(v);
    const proto = typeof v === 'object' && Object.getPrototypeOf(v);
    if (open.has(v) || !(Array.isArray(v) || proto === Object.prototype || proto === null)) {
      throw refuse(
        key,
        open.has(v)
          ? 'a cycle'
          : typeof v === 'object'
            ? `a ${Object.prototype.toString.call(v).slice(8, -1)}`
            : typeof v === 'string'
              ? 'a lone surrogate'
              : typeof v === 'bigint'
                ? 'a BigInt'
                : String(v),
      );
    }
    // Written so that a maxDepth that is not a number refuses everything rather than nothing.
    if (!(open.size < maxDepth)) throw new InvalidInputError(`JSON nested deeper than ${maxDepth} levels`);
    open.add(v);
    const parts: string[] = [];
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const item = write(v[i], String(i));
        if (item === undefined) throw refuse(String(i), 'undefined');
        parts.push(item);
      }
    } else {
      // Array.prototype.sort compares strings by UTF-16 code units, as RFC 8785 §3.2.3 asks.
      for (const name of Object.keys(v).sort()) {
        const member = write((v as Record<string, unknown>)[name], name);
        // A name is a string like any other: written, or refused, the same way.
        if (member !== undefined) parts.push(`${write(name, name)}:${member}`);
      }
    }
    open.delete(v);
    return Array.isArray(v) ? `[${parts.join(',')}]` : `{${parts.join(',')}}`;
  };
  const text = write(value, '');
  if (text === undefined) throw refuse('', 'undefined');
  return text;
}
