/**
 * The grammar of a script header's `Returns:` lines, which declare the reply field by field so
 * the bundle can generate its typed decoder:
 *
 *   Returns: {code, charged integer, balance integer, needed integer}
 *   Returns KEY_REFUSED: {code, reason string}
 *
 * A reply is a Lua array whose first element is the result code. Each
 * further element is `name type`, in order; `name type?` may be absent (or an empty string or
 * table); `...name type` is every element to the end, and `...name {a type, b type}` the rest in
 * groups. A `Returns CODE|CODE:` line gives the reply of those codes; the plain `Returns:` line,
 * every other code's. Types:
 *   integer, string        a number, a string
 *   0|1                    a boolean
 *   'a'|'b'                one of these strings
 *   json                   JSON text, for records of variable length (the caller checks it)
 *   json {a type, ...}     JSON text of an object with these fields
 *   <form>                 a shared reply form: `hold` (lib/holds.lua's header), `windows`
 *                          (lib/windows.lua: the spec, then each window's numbers)
 * Pure: the header text comes in, the shape goes out.
 */

export class ReplyGrammarError extends Error {
  override readonly name = 'ReplyGrammarError';
}

export type ReplyType =
  | { kind: 'integer' | 'string' | 'flag' | 'json' }
  | { kind: 'oneOf'; values: string[] }
  /** JSON text of an object with these fields. */
  | { kind: 'jsonObject'; fields: ReplyField[] }
  /** Elements in a row, as one group of a `...rest`. */
  | { kind: 'group'; fields: ReplyField[] }
  | { kind: 'form'; form: string };

export interface ReplyField {
  name: string;
  type: ReplyType;
  /** `?`: may be absent. */
  optional: boolean;
  /** `...`: every element to the end (in groups for an object type). */
  rest: boolean;
}

export interface ReplyShape {
  /** The codes this shape answers; empty for the default shape. */
  codes: string[];
  /** The fields after the code. */
  fields: ReplyField[];
}

/** Splits "a, b {c, d}, e" at the commas outside braces. */
function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '{') depth++;
    if (ch === '}') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

function parseType(text: string, where: string): ReplyType {
  const t = text.trim();
  if (t === 'integer' || t === 'string' || t === 'json') return { kind: t };
  if (t === '0|1') return { kind: 'flag' };
  if (/^'[^']*'(\|'[^']*')*$/.test(t)) return { kind: 'oneOf', values: t.split('|').map((v) => v.slice(1, -1)) };
  const json = /^json\s*\{(.*)\}$/s.exec(t);
  if (json) return { kind: 'jsonObject', fields: parseFields(json[1]!, where, true) };
  const group = /^\{(.*)\}$/s.exec(t);
  if (group) return { kind: 'group', fields: parseFields(group[1]!, where, true) };
  if (/^\w+$/.test(t)) return { kind: 'form', form: t };
  throw new ReplyGrammarError(`${where}: unknown reply type "${t}"`);
}

function parseFields(text: string, where: string, inJson: boolean): ReplyField[] {
  return splitTop(text).map((part) => {
    const m = /^(\.\.\.)?(\w+)\s+(.+?)(\?)?$/s.exec(part);
    if (!m) throw new ReplyGrammarError(`${where}: a reply field is "name type", not "${part}"`);
    const field = { name: m[2]!, type: parseType(m[3]!, where), optional: m[4] === '?', rest: m[1] === '...' };
    if (inJson && (field.rest || field.type.kind === 'form')) throw new ReplyGrammarError(`${where}: a field inside braces is integer, string, 0|1 or 'a'|'b'`);
    return field;
  });
}

/** The body of one `{...}` declaration: `code` first, then the fields. */
export function parseReplyBody(body: string, where: string): ReplyField[] {
  const [first, ...rest] = splitTop(body);
  if (first !== 'code') throw new ReplyGrammarError(`${where}: a reply starts with code`);
  const fields = parseFields(rest.join(', '), where, false);
  fields.forEach((f, i) => {
    if (f.rest && i !== fields.length - 1) throw new ReplyGrammarError(`${where}: only the last field may be ...${f.name}`);
  });
  return rest.length === 0 ? [] : fields;
}

/**
 * Each `<opener> {...}` of a header's lines: the opener's match and the body up to the closing
 * brace, which may be lines later, on one line. Text after the brace is prose.
 */
function declarations(lines: readonly string[], opener: RegExp, what: (m: RegExpExecArray) => string): Array<{ m: RegExpExecArray; body: string }> {
  const text = lines.join('\n');
  const out: Array<{ m: RegExpExecArray; body: string }> = [];
  for (let m = opener.exec(text); m; m = opener.exec(text)) {
    let depth = 1;
    let i = m.index + m[0].length;
    const start = i;
    for (; i < text.length && depth > 0; i++) {
      if (text[i] === '{') depth++;
      if (text[i] === '}') depth--;
    }
    if (depth > 0) throw new ReplyGrammarError(`${what(m)} has no closing brace`);
    out.push({ m, body: text.slice(start, i - 1).replace(/\s+/g, ' ') });
  }
  return out;
}

/** The `Returns[ CODES]: {...}` declarations of a header's lines. */
export function parseReturns(lines: readonly string[], file: string): ReplyShape[] {
  const where = (m: RegExpExecArray) => `${file}: Returns${m[1] ? ` ${m[1]}` : ''}`;
  const shapes = declarations(lines, /(?:^|\n)\s*Returns(?:\s+([A-Z_|]+))?:\s*\{/g, where).map(({ m, body }) => ({
    codes: m[1] ? m[1].split('|') : [],
    fields: parseReplyBody(body, where(m)),
  }));
  if (!shapes.some((s) => s.codes.length === 0)) throw new ReplyGrammarError(`${file}: the header declares no plain "Returns: {code, ...}"`);
  return shapes;
}

/**
 * A reply form declared in a lib/ header: `Reply form <name>: {field type, ...}` (no code: a
 * form is an element of a reply, or a stored record).
 */
export function parseForms(lines: readonly string[], file: string): Map<string, ReplyField[]> {
  const where = (m: RegExpExecArray) => `${file}: reply form ${m[1]}`;
  const found = declarations(lines, /(?:^|\n)\s*Reply form (\w+):\s*\{/g, where);
  return new Map(found.map(({ m, body }) => [m[1]!, parseFields(body, where(m), false)]));
}
