// The examples are read as code to copy: they import the package by its published names
// (`tollgate`, `tollgate/express`, ...), never a path into this repository's src/, and each
// name they use is one package.json exports (resolved to src/ here by the tollgate-source
// condition, to dist/ in an installed copy).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const exported = new Set(
  Object.keys(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).exports as Record<string, unknown>).map((subpath) => `tollgate${subpath.slice(1)}`),
);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module specifier of a file: static imports and exports, and dynamic imports. */
function specifiers(source: string): string[] {
  return [...source.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*(['"])([^'"]+)\1/g)].map((match) => match[2]!);
}

describe('examples/ imports', () => {
  const files = sources(join(root, 'examples'));

  it('reaches src/ only through the package name', () => {
    const intoSrc = files.flatMap((file) =>
      specifiers(readFileSync(file, 'utf8'))
        .filter((specifier) => specifier.startsWith('.') && relative(root, join(file, '..', specifier)).split(/[\\/]/)[0] === 'src')
        .map((specifier) => `${relative(root, file)}: ${specifier}`),
    );
    expect(intoSrc).toEqual([]);
  });

  it('uses only names the package exports', () => {
    const used = new Set(files.flatMap((file) => specifiers(readFileSync(file, 'utf8')).filter((specifier) => /^tollgate(\/|$)/.test(specifier))));
    expect(used.size).toBeGreaterThan(0);
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
  });
});
