// Canonical JSON per RFC 8785 (JCS), the text request fingerprints are taken of (docs/idempotency.md): the
// RFC's own examples and number vectors, and the bodies that used to break fingerprints.
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../src/errors.ts';
import { canonicalJson } from '../src/canonicalJson.ts';
import { fingerprint } from '../src/idempotency.ts';

/** canonicalJson's default bound on nesting. */
const CANONICAL_JSON_MAX_DEPTH = 256;

/** A double from the 16 hex digits of its IEEE 754 bits, as RFC 8785 Appendix B lists them. */
function double(bits: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${bits}`));
  return view.getFloat64(0);
}

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { a: value };
  return value;
}

describe('canonical JSON (RFC 8785)', () => {
  it('the RFC §3.2.2 example: primitives as ECMAScript writes them, members sorted, no whitespace', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",' +
        ' "literals": [null, true, false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('the RFC §3.2.3 sorting example: member names sorted by UTF-16 code units (a surrogate pair sorts by its high surrogate)', () => {
    const input = JSON.parse(
      '{"\\u20ac": "Euro Sign", "\\r": "Carriage Return", "\\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One",' +
        ' "\\ud83d\\ude00": "Emoji: Grinning Face", "\\u0080": "Control", "\\u00f6": "Latin Small Letter O With Diaeresis"}',
    );
    expect(canonicalJson(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",' +
        '"\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    // Code units, not code points: U+1F600 (D83D DE00) sorts before U+FB33, though it is the larger code point.
    expect(canonicalJson({ '\ufb33': 1, '\u{1f600}': 2, '\uffff': 3 })).toBe('{"\u{1f600}":2,"\ufb33":1,"\uffff":3}');
  });

  it('the RFC Appendix B number vectors: the shortest text that reads back as the same double', () => {
    const vectors: Array<[string, string]> = [
      ['0000000000000000', '0'],
      ['8000000000000000', '0'], // -0
      ['0000000000000001', '5e-324'],
      ['8000000000000001', '-5e-324'],
      ['7fefffffffffffff', '1.7976931348623157e+308'],
      ['ffefffffffffffff', '-1.7976931348623157e+308'],
      ['4340000000000000', '9007199254740992'],
      ['c340000000000000', '-9007199254740992'],
      ['4430000000000000', '295147905179352830000'],
      ['44b52d02c7e14af5', '9.999999999999997e+22'],
      ['44b52d02c7e14af6', '1e+23'],
      ['44b52d02c7e14af7', '1.0000000000000001e+23'],
      ['444b1ae4d6e2ef4e', '999999999999999700000'],
      ['444b1ae4d6e2ef4f', '999999999999999900000'],
      ['444b1ae4d6e2ef50', '1e+21'],
      ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
      ['3eb0c6f7a0b5ed8d', '0.000001'],
      ['41b3de4355555553', '333333333.3333332'],
      ['41b3de4355555554', '333333333.33333325'],
      ['41b3de4355555555', '333333333.3333333'],
      ['41b3de4355555556', '333333333.3333334'],
      ['41b3de4355555557', '333333333.33333343'],
      ['becbf647612f3696', '-0.0000033333333333333333'],
      ['43143ff3c1cb0959', '1424953923781206.2'],
    ];
    for (const [bits, text] of vectors) expect(canonicalJson(double(bits)), bits).toBe(text);
    expect(canonicalJson([1e21, -0, 4.5e-7, 333333333.33333329, 1e-7, 123e18])).toBe('[1e+21,0,4.5e-7,333333333.3333333,1e-7,123000000000000000000]');
  });

  it('NaN and the infinities (Appendix B: 7fffffffffffffff, 7ff0000000000000) are not JSON: InvalidInputError', () => {
    for (const value of [double('7fffffffffffffff'), double('7ff0000000000000'), -Infinity, { at: [NaN] }]) {
      expect(() => canonicalJson(value)).toThrow(InvalidInputError);
    }
  });

  it('strings are escaped as JSON.stringify escapes them; a lone surrogate is not well-formed and is refused', () => {
    expect(canonicalJson('\u0000\u001f\u007f\u2028"\\/\b\f\n\r\t')).toBe('"\\u0000\\u001f\u007f\u2028\\"\\\\/\\b\\f\\n\\r\\t"');
    expect(canonicalJson('\ud83d\ude00')).toBe('"\ud83d\ude00"');
    expect(() => canonicalJson('\ud800')).toThrow(InvalidInputError);
    expect(() => canonicalJson({ '\udc00x': 1 })).toThrow(InvalidInputError);
    expect(() => canonicalJson(['a\ude00'])).toThrow(/lone surrogate/);
  });

  it('toJSON is honoured as JSON.stringify honours it: a Date is its ISO string, so two dates differ', () => {
    expect(canonicalJson({ at: new Date(0) })).toBe('{"at":"1970-01-01T00:00:00.000Z"}');
    expect(fingerprint({ at: new Date(0) })).not.toBe(fingerprint({ at: new Date(1e12) }));
    expect(fingerprint({ at: new Date(0) })).toBe(fingerprint({ at: '1970-01-01T00:00:00.000Z' }));
    // toJSON gets the member's name, and its result is written canonically.
    const seen: string[] = [];
    const value = { toJSON: (key: string) => (seen.push(key), { z: 1, a: [2] }) };
    expect(canonicalJson({ inner: value })).toBe('{"inner":{"a":[2],"z":1}}');
    expect(seen).toEqual(['inner']);
    // Boxed primitives are objects of their own classes: refused, not read as their values.
    expect(() => canonicalJson([Object(1)])).toThrow(/a Number/);
  });

  it('values JSON.stringify would drop or change silently are InvalidInputError: BigInt, functions, symbols, cycles, Map, undefined in an array', () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = { back: cycle };
    const refused: unknown[] = [
      10n,
      { n: 1n },
      () => 1,
      { f: () => 1 },
      Symbol('s'),
      { s: Symbol('s') },
      cycle,
      new Map([['a', 1]]),
      new Set([1]),
      [undefined],
      [1, , 2],
      undefined,
    ];
    for (const value of refused) expect(() => canonicalJson(value)).toThrow(InvalidInputError);
    expect(() => fingerprint({ count: 10n })).toThrow(/BigInt/);
    expect(() => fingerprint(cycle)).toThrow(/cycle/);
  });

  it('an object member that is undefined is left out, as JSON.stringify leaves it out; a shared (not cyclic) object is fine', () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe('{"a":1}');
    const shared = { x: 1 };
    expect(canonicalJson([shared, { again: shared }])).toBe('[{"x":1},{"again":{"x":1}}]');
    expect(canonicalJson(Object.assign(Object.create(null), { b: 2, a: 1 }))).toBe('{"a":1,"b":2}');
    expect(canonicalJson(JSON.parse('{"__proto__":{"x":1},"constructor":2}'))).toBe('{"__proto__":{"x":1},"constructor":2}');
  });

  it(`nesting is bounded: ${CANONICAL_JSON_MAX_DEPTH} levels are written, one more (or 5,000) is InvalidInputError, not a stack overflow`, () => {
    expect(canonicalJson(nested(CANONICAL_JSON_MAX_DEPTH))).toMatch(/^\{"a":\[\{"a":/);
    expect(() => canonicalJson(nested(CANONICAL_JSON_MAX_DEPTH + 1))).toThrow(InvalidInputError);
    expect(() => fingerprint(nested(5_000))).toThrow(/nested deeper than 256/);
    const deep = JSON.parse(`${'['.repeat(5_000)}${']'.repeat(5_000)}`);
    expect(() => fingerprint(deep)).toThrow(InvalidInputError);
    expect(canonicalJson(nested(3), { maxDepth: 3 })).toBe('[{"a":[1]}]');
    expect(() => canonicalJson(nested(4), { maxDepth: 3 })).toThrow(/deeper than 3/);
  });

  it('equal bodies whatever their key order share a fingerprint; other bodies do not', () => {
    expect(fingerprint({ items: ['a'], optional: true })).toBe(fingerprint({ optional: true, items: ['a'] }));
    expect(fingerprint({ n: 1 })).toBe(fingerprint({ n: 1.0 }));
    expect(fingerprint({ n: 1 })).not.toBe(fingerprint({ n: '1' }));
    expect(fingerprint(null)).toBe(fingerprint(null));
    expect(fingerprint([1, 2])).not.toBe(fingerprint([2, 1]));
  });
});
