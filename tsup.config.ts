import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { defineConfig } from 'tsup';

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
