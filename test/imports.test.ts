// The shape of src/'s imports: no module reaches itself through its imports (type-only imports
// count too: a circle of types is still a knot a reader has to untie), and src/rules/ (the
// checks and the outcome types) imports nothing that talks to Redis.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const src = join(import.meta.dirname, '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Each file of src/ and the files of src/ it imports or re-exports (relative specifiers only). */
function importGraph(dir: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(dir)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, false);
    const targets = importedFiles
      .map((f) => f.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => resolve(dirname(file), name));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** Every circle of the graph, each once, as the files along it (Tarjan's strongly connected components). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!graph.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.reverse());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

const name = (file: string) => relative(src, file);

describe('imports of src/', () => {
  it('form no circle, type-only imports included', () => {
    expect(circles(importGraph(src)).map((circle) => circle.map(name).join(' -> '))).toEqual([]);
  });

  it('the check finds a circle when there is one (type-only, three files long)', () => {
    const graph = new Map([
      ['context.ts', ['denyCache.ts']],
      ['denyCache.ts', ['limits.ts']],
      ['limits.ts', ['context.ts', 'windows.ts']],
      ['windows.ts', []],
    ]);
    expect(circles(graph)).toEqual([['context.ts', 'denyCache.ts', 'limits.ts']]);
    expect(circles(new Map([['a.ts', ['a.ts']]]))).toEqual([['a.ts']]);
    expect(
      circles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', []],
        ]),
      ),
    ).toEqual([]);
  });

  it('src/rules/ holds checks and outcome types only: it imports nothing outside itself but the error classes', () => {
    const rules = join(src, 'rules');
    const outside = [...importGraph(src)]
      .filter(([file]) => file.startsWith(`${rules}/`))
      .flatMap(([file, targets]) =>
        targets.filter((to) => !to.startsWith(`${rules}/`) && to !== join(src, 'errors.ts')).map((to) => `${name(file)} -> ${name(to)}`),
      );
    expect(outside).toEqual([]);
    const packages = sourceFiles(rules).flatMap((file) =>
      ts
        .preProcessFile(readFileSync(file, 'utf8'), true, false)
        .importedFiles.map((f) => f.fileName)
        .filter((n) => !n.startsWith('.') && n !== 'node:crypto')
        .map((n) => `${name(file)} -> ${n}`),
    );
    expect(packages).toEqual([]);
  });
});
