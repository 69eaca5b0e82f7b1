/**
 * Build step: the TypeScript of a script's reply type and decoder, from the shapes its header
 * declares, as node-redis pairs each command with its
 * transformReply. A concept module reads named fields; it never indexes a reply.
 */
import { ReplyGrammarError, type ReplyField, type ReplyShape, type ReplyType } from './replyGrammar.ts';

/** A reply form decoded by hand-written code: its type, decoder and module (from src/scripts/generated/). */
export interface HandForm {
  type: string;
  decoder: string;
  module: string;
  /**
   * It spans a variable number of elements from where it starts: the decoder takes (reply,
   * at) and its value's `next` is the index after it.
   */
  inline: boolean;
}

/** Forms: the generated ones (lib/ headers, in ./forms.ts) and the hand-written ones. */
export interface FormTable {
  generated: ReadonlySet<string>;
  hand: Readonly<Record<string, HandForm>>;
}

const formType = (name: string) => `${name[0]!.toUpperCase()}${name.slice(1)}Form`;
const formDecoder = (name: string) => `decode${name[0]!.toUpperCase()}${name.slice(1)}`;

/** What a piece of generated code needs: reader helpers and form decoders it imports. */
export class Needs {
  readonly readers = new Set<string>();
  readonly forms = new Set<string>();
  readonly hand = new Map<string, Set<string>>();
  readonly consts: string[] = [];

  readonly table: FormTable;

  constructor(table: FormTable) {
    this.table = table;
  }

  /** A module constant (a oneOf list), named once. */
  constant(value: string): string {
    let i = this.consts.indexOf(value);
    if (i < 0) i = this.consts.push(value) - 1;
    return `ONE_OF_${i}`;
  }

  form(name: string, where: string): { type: string; decoder: string; inline: boolean } {
    if (this.table.generated.has(name)) {
      this.forms.add(formType(name)).add(formDecoder(name));
      return { type: formType(name), decoder: formDecoder(name), inline: false };
    }
    const hand = this.table.hand[name];
    if (!hand) throw new ReplyGrammarError(`${where}: no reply form "${name}"`);
    const names = this.hand.get(hand.module) ?? new Set<string>();
    names.add(hand.type).add(hand.decoder);
    this.hand.set(hand.module, names);
    return hand;
  }
}

/** The TypeScript type of one element. */
function typeOf(type: ReplyType, needs: Needs, where: string): string {
  switch (type.kind) {
    case 'integer':
      return 'number';
    case 'string':
      return 'string';
    case 'flag':
      return 'boolean';
    case 'json':
      return 'unknown';
    case 'oneOf':
      return type.values.map((v) => JSON.stringify(v)).join(' | ');
    case 'jsonObject':
    case 'group':
      return `{ ${type.fields.map((f) => `${f.name}: ${fieldType(f, needs, where)}`).join('; ')} }`;
    case 'form':
      return needs.form(type.form, where).type;
  }
}

function fieldType(f: ReplyField, needs: Needs, where: string): string {
  const t = typeOf(f.type, needs, where);
  if (f.rest) return f.optional ? `Array<${t} | undefined>` : /[|{]/.test(t) ? `Array<${t}>` : `${t}[]`;
  return f.optional ? `${t} | undefined` : t;
}

/** The expression that reads `at` (an expression of one element) as its type. */
function readOne(type: ReplyType, at: string, needs: Needs, where: string): string {
  switch (type.kind) {
    case 'integer':
      needs.readers.add('int');
      return `int(${at})`;
    case 'string':
      needs.readers.add('text');
      return `text(${at})`;
    case 'flag':
      needs.readers.add('flag');
      return `flag(${at})`;
    case 'json':
      needs.readers.add('json');
      return `json(${at})`;
    case 'oneOf':
      needs.readers.add('oneOf');
      return `oneOf(${at}, ${needs.constant(`[${type.values.map((v) => JSON.stringify(v)).join(', ')}] as const`)})`;
    case 'jsonObject': {
      needs.readers.add('json').add('field');
      const fields = type.fields.map((f) => `${f.name}: ${readOne(f.type, `field(o, ${JSON.stringify(f.name)})`, needs, where)}`);
      return `((o) => ({ ${fields.join(', ')} }))(json(${at}))`;
    }
    case 'group':
      throw new ReplyGrammarError(`${where}: a group {...} is only for a ...rest`);
    case 'form': {
      const form = needs.form(type.form, where);
      if (form.inline) throw new ReplyGrammarError(`${where}: the ${type.form} form spans elements: not inside another`);
      return `${form.decoder}(${at})`;
    }
  }
}

/**
 * The object literal of one shape's fields read from `r` (a reply's elements from index 1,
 * after the code; a form's from 0), with the statements that must run before it (an inline form's decoding).
 */
function readFields(fields: readonly ReplyField[], needs: Needs, where: string, start = 1): { statements: string[]; props: string[] } {
  const statements: string[] = [];
  const props: string[] = [];
  let base = '';
  let offset = start;
  const index = () => (base ? `${base} + ${offset}` : String(offset)).replace(/ \+ 0$/, '');
  for (const f of fields) {
    if (f.type.kind === 'form' && needs.form(f.type.form, where).inline) {
      if (f.rest || f.optional) throw new ReplyGrammarError(`${where}: the ${f.type.form} form is neither ...rest nor optional`);
      const form = needs.form(f.type.form, where);
      statements.push(`const ${f.name} = ${form.decoder}(r, ${index()});`);
      props.push(f.name);
      base = `${f.name}.next`;
      offset = 0;
      continue;
    }
    if (f.rest) {
      if (f.type.kind === 'group') {
        needs.readers.add('groups');
        const group = f.type.fields.map((g, k) => `${g.name}: ${readOne(g.type, `r[at${k ? ` + ${k}` : ''}]`, needs, where)}`);
        props.push(`${f.name}: groups(r, ${index()}, ${f.type.fields.length}, (at) => ({ ${group.join(', ')} }))`);
      } else {
        const one = readOne(f.type, 'v', needs, where);
        if (f.optional) needs.readers.add('present');
        props.push(`${f.name}: r.slice(${index()}).map((v) => ${f.optional ? `(present(v) ? ${one} : undefined)` : one})`);
      }
      continue;
    }
    const at = `r[${index()}]`;
    if (f.optional) {
      needs.readers.add('present');
      props.push(`${f.name}: present(${at}) ? ${readOne(f.type, at, needs, where)} : undefined`);
    } else props.push(`${f.name}: ${readOne(f.type, at, needs, where)}`);
    offset++;
  }
  return { statements, props };
}

/** A script's reply type (a union by code when some codes answer another shape) and decoder. */
export function renderReply(typeName: string, shapes: readonly ReplyShape[], needs: Needs, where: string): { type: string; decode: string } {
  needs.readers.add('codeOf');
  const special = shapes.filter((s) => s.codes.length > 0);
  const plain = shapes.find((s) => s.codes.length === 0)!;
  const codeType = (codes: readonly string[]) => codes.map((c) => `typeof CODE.${c}`).join(' | ');
  const taken = special.flatMap((s) => s.codes);
  const variant = (shape: ReplyShape, code: string) => {
    const fields = shape.fields.map((f) => `${f.name}: ${fieldType(f, needs, where)}`);
    return `{ code: ${code}${fields.length ? `; ${fields.join('; ')}` : ''} }`;
  };
  const variants = [...special.map((s) => variant(s, codeType(s.codes))), variant(plain, taken.length ? `Exclude<Code, ${codeType(taken)}>` : 'Code')];
  const type =
    variants.length === 1 ? `export type ${typeName} = ${variants[0]};` : `export type ${typeName} =\n${variants.map((v) => `  | ${v}`).join('\n')};`;
  const body = (shape: ReplyShape, indent: string) => {
    const { statements, props } = readFields(shape.fields, needs, where);
    return [...statements.map((s) => `${indent}${s}`), `${indent}return { ${['code', ...props].join(', ')} };`].join('\n');
  };
  const lines = ['(r) => {', '    const code = codeOf(r[0]);'];
  for (const s of special) {
    lines.push(`    if (${s.codes.map((c) => `code === CODE.${c}`).join(' || ')}) {`, body(s, '      '), '    }');
  }
  lines.push(body(plain, '    '), '  }');
  return { type, decode: lines.join('\n') };
}

/** ./forms.ts: each lib/ header's `Reply form`, its type and decoder (of one nested table). */
export function renderForms(forms: ReadonlyMap<string, { file: string; fields: ReplyField[] }>, needs: Needs): string {
  const parts = [...forms].map(([name, { file, fields }]) => {
    const where = `${file}: reply form ${name}`;
    const type = `/** ${file}'s reply form \`${name}\`. */\nexport interface ${formType(name)} {\n${fields.map((f) => `  ${f.name}: ${fieldType(f, needs, where)};`).join('\n')}\n}`;
    const { statements, props } = readFields(fields, needs, where, 0);
    if (statements.length) throw new ReplyGrammarError(`${where}: a form holds no inline form`);
    needs.readers.add('list');
    const decode = `/** Reads ${file}'s reply form \`${name}\` from its nested table. */\nexport function ${formDecoder(name)}(value: unknown): ${formType(name)} {\n  const r = list(value);\n  return {\n${props.map((p) => `    ${p},`).join('\n')}\n  };\n}`;
    return `${type}\n\n${decode}`;
  });
  return parts.join('\n\n');
}
