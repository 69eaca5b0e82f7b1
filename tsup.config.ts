import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { defineConfig } from 'tsup';

// `npm run build` is `tsup && node tsup.config.ts`: tsup writes dist/, then this file, run as a
// program, trims the declarations' comments (trimDeclarations below). It cannot be tsup's
// onSuccess, which runs beside the declaration build, not after it.
//
// One implementation, built once as CommonJS with its declarations; each entry's ESM file is a
// thin wrapper that imports it (Node's "ES module wrapper" for dual packages). So the package
// ships the code and the Lua once, not twice (the packed size is tested), and a process
// that both imports and requires tollgate holds one copy of it (one TollgateError class, one
// deny cache). The Lua sources reach the bundle through src/scripts/bundle.generated.ts (each
// lib/ helper once, in src/scripts/generated/lib/), so nothing is read from disk at run time.
const ENTRIES = {
  index: 'src/index.ts',
  'model/index': 'src/model/index.ts',
  errors: 'src/errors.ts',
  http: 'src/http.ts',
  express: 'src/express.ts',
  koa: 'src/koa.ts',
  fastify: 'src/fastify.ts',
  hono: 'src/hono.ts',
};

/** The operator CLI, the package's `tollgate` bin: a program, with no ESM wrapper or declarations to import. */
const BIN = { cli: 'src/cli/main.ts' };

export default defineConfig(() => {
  // Cleaned here rather than by tsup, whose declaration step would also delete the ESM
  // wrappers' .d.ts files written below.
  rmSync(join(process.cwd(), 'dist'), { recursive: true, force: true });
  return {
    entry: { ...ENTRIES, ...BIN },
    format: ['cjs'],
    // Constructors that take the internal Context (or the model's ModelCore) are @internal:
    // hosts get these objects from createTollgate (or TollgateModel), and the declarations name
    // no private type. A comment before a file's imports is kept with them, so a file opens
    // with a // comment unless it is an entry whose @module comment TypeDoc reads.
    dts: { entry: ENTRIES, compilerOptions: { stripInternal: true } },
    clean: false,
    // A sourcemap would point at src/, which is not shipped, or embed it again.
    sourcemap: false,
    // Minified: about 7 KB packed less than whitespace only. Without keepNames (which would add
    // about 3.8 KB packed), functions and classes keep only their minified names (fn.name, a
    // class's own .name, a stack frame: `at ye`). What a host reads is not a source name: every
    // error class sets its instances' `name` in a field (`error.name === "InvalidInputError"`)
    // beside its stable `code`, and instanceof works on the classes themselves (docs/errors.md#error-classes).
    minify: true,
    keepNames: false,
    // Rollup, not tsup's default (sucrase), turns the split ESM chunks into CommonJS: sucrase also
    // lowers optional chaining, ?? and class fields into helpers (20 KB unpacked, 3.5 KB packed)
    // and emits broken code for minified class fields. esbuild has tree-shaken already: rollup's
    // pass only changes the module format.
    treeshake: true,
    // import.meta.url in CommonJS (src/telemetry.ts finds the optional @opentelemetry/api with it).
    shims: true,
    target: 'node22',
    // The model and the middleware share the library's modules with the main entry: one copy in a chunk.
    splitting: true,
    esbuildPlugins: [publicEntry],
    async onSuccess() {
      const require = createRequire(import.meta.url);
      for (const name of Object.keys(ENTRIES)) {
        const cjs = join(process.cwd(), 'dist', `${name}.cjs`);
        delete require.cache[cjs];
        writeEsmWrapper(join(process.cwd(), 'dist', name), Object.keys(require(cjs) as object));
      }
    },
  };
});

/**
 * The middlewares (src/express.ts, src/koa.ts, src/fastify.ts, src/hono.ts) and the CLI
 * (src/cli/) use the public API only, through "./http.ts", "./index.ts" or "../errors.ts":
 * in the build those imports are the package's own entries (dist/http.cjs, dist/index.cjs,
 * dist/errors.cjs), not a second copy of the library.
 */
const publicEntry = {
  name: 'tollgate-public-entry',
  setup(build: {
    onResolve(options: { filter: RegExp }, callback: (args: { path: string; importer: string }) => { path: string; external: boolean } | undefined): void;
  }) {
    build.onResolve({ filter: /^\.\.?\/(index|http|errors)\.ts$/ }, (args) =>
      /\/src\/(express|koa|fastify|hono|cli\/[a-z]+)\.ts$/.test(args.importer)
        ? { path: `./${args.path.replace(/^\.\.?\//, '').replace(/\.ts$/, '.cjs')}`, external: true }
        : undefined,
    );
  },
};

/** dist/<entry>.js and .d.ts: the CommonJS build's exports, named one by one for ESM. */
function writeEsmWrapper(base: string, names: string[]): void {
  const file = JSON.stringify(`./${base.split('/').pop()}.cjs`);
  const exported = names.filter((n) => n !== '__esModule').sort();
  mkdirSync(dirname(base), { recursive: true });
  const body = exported.length === 0 ? 'export {};\n' : `import cjs from ${file};\nexport const {\n${exported.map((n) => `  ${n},`).join('\n')}\n} = cjs;\n`;
  writeFileSync(`${base}.js`, body);
  writeFileSync(`${base}.d.ts`, `export * from ${file};\n`);
}

/**
 * After tsup: each JSDoc comment of the .d.cts files under dist/ (the .d.ts files only re-export them) cut
 * to what an editor shows on hover: its first sentence (firstSentence), on one line of at most
 * SUMMARY_MAX characters, and the
 * tags an editor reads (@deprecated, @default, @param, @returns, @throws). @example blocks,
 * later paragraphs and the entries' @module comments stay in src/, which TypeDoc's reference
 * (`npm run docs`) reads, and docs/ says it all. The package's size budget (120 KB packed)
 * needs it: the full comments are a quarter of the package. test/package.test.ts checks the shipped summaries against src/.
 */
export function trimDeclarations(dir: string): void {
  for (const file of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.d.cts')) continue;
    const path = join(dir, file);
    // The model's classes mirror the library's, whose declarations carry the summaries: its own
    // comments are left to src/ and docs/ (the package's size budget).
    writeFileSync(path, trimComments(readFileSync(path, 'utf8'), !file.startsWith('model')));
  }
}

/** The tags an editor shows with a declaration; the others (@example, @module, @remarks) are dropped. */
const EDITOR_TAGS = new Set(['deprecated', 'default', 'defaultValue', 'param', 'typeParam', 'returns', 'throws']);

/** A declaration file's JSDoc comments trimmed to their summary and editor tags; a comment left with nothing goes with its line. */
export function trimComments(text: string, summaries = true): string {
  return text.replace(/^([ \t]*)\/\*\*([\s\S]*?)\*\/[ \t]*\n(\n?)/gm, (_match, indent: string, body: string, blank: string) => {
    const kept = summaries ? summaryOf(body) : deprecationOf(body);
    if (kept === null) return '';
    if (kept.length === 1 || (summaries && !kept.some((line) => /^\s*(```|@)/.test(line)))) return `${indent}/** ${brief(kept)} */\n${blank}`;
    return `${indent}/**\n${kept.map((line) => (line === '' ? `${indent} *` : `${indent} * ${line}`)).join('\n')}\n${indent} */\n${blank}`;
  });
}

/** A comment's first paragraph and editor tags, as lines without their ` * `; null for a comment to drop. */
function summaryOf(body: string): string[] | null {
  const lines = body.split('\n').map((line, i) => (i === 0 ? line.trimStart() : line.replace(/^\s*\* ?/, '')).trimEnd());
  // The description, then the tags: a line that starts with @name outside a code fence opens a tag.
  let fenced = false;
  const description: string[] = [];
  const tags: string[][] = [];
  for (const line of lines) {
    const opensTag = !fenced && /^@[A-Za-z]+(\s|$)/.test(line);
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (opensTag) tags.push([line]);
    else if (tags.length > 0) tags.at(-1)!.push(line);
    else description.push(line);
  }
  if (tags.some(([first]) => first!.startsWith('@module'))) return null;
  // The first paragraph: up to the first blank line that is not inside a code block.
  const summary: string[] = [];
  fenced = false;
  for (const line of description) {
    if (line === '' && !fenced) {
      if (summary.length > 0) break;
      continue;
    }
    if (/^\s*```/.test(line)) fenced = !fenced;
    summary.push(line);
  }
  const kept = tags.filter(([first]) => EDITOR_TAGS.has(first!.slice(1).split(/\s/)[0]!)).map((tag) => trimTrailingBlanks(tag));
  const out = [...firstSentence(summary), ...kept.flat()];
  return out.length === 0 ? null : out;
}

/** A comment's @deprecated tag alone (the model's declarations keep only that); null when it has none. */
function deprecationOf(body: string): string[] | null {
  const line = body.split('\n').find((text) => /^\s*\*?\s*@deprecated/.test(text));
  return line === undefined ? null : [line.replace(/^\s*\*?\s*/, '').trimEnd()];
}

/** The longest summary shipped, in characters: longer ones end at a word, with an ellipsis. */
export const SUMMARY_MAX = 120;

/** A summary's lines as one line of at most SUMMARY_MAX characters. */
function brief(lines: string[]): string {
  const text = lines
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join(' ');
  if (text.length <= SUMMARY_MAX) return text;
  const cut = text.slice(0, SUMMARY_MAX - 1);
  return `${cut.slice(0, Math.max(cut.lastIndexOf(' '), 1))}…`;
}

/** Abbreviations whose full stop ends no sentence. */
const ABBREVIATION = /\b(?:e\.g|i\.e|etc|vs|approx)$/;

/**
 * A paragraph's first sentence, its lines kept as they are up to the full stop (or `!`, `?`)
 * followed by a space or the end, outside `code` spans; text before a code block when the
 * sentence reaches one. A paragraph with none is kept whole.
 */
function firstSentence(lines: string[]): string[] {
  const out: string[] = [];
  let code = false;
  for (const line of lines) {
    if (/^\s*```/.test(line)) return out.length > 0 ? out : lines;
    for (let i = 0; i < line.length; i++) {
      const ch = line[i]!;
      if (ch === '`') code = !code;
      else if (!code && (ch === '.' || ch === '!' || ch === '?') && (i + 1 === line.length || line[i + 1] === ' ') && !ABBREVIATION.test(line.slice(0, i))) {
        out.push(line.slice(0, i + 1));
        return out;
      }
    }
    out.push(line);
  }
  return out;
}

function trimTrailingBlanks(lines: string[]): string[] {
  let end = lines.length;
  while (end > 1 && lines[end - 1] === '') end--;
  return lines.slice(0, end);
}

// `node tsup.config.ts` (the end of `npm run build`): trim what tsup wrote.
if (import.meta.main) trimDeclarations(join(process.cwd(), 'dist'));
