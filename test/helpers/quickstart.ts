// What the README's quick start (examples/quickstart.ts, and its ioredis twin) says it prints:
// the comment after `console.log(charge)`, which the tests hold its output to, word for word.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const examples = join(import.meta.dirname, '..', '..', 'examples');

/** The charge outcome an example's comment says `console.log(charge)` prints. */
export function quickStartPrints(file = 'quickstart.ts'): string {
  const match = /console\.log\(charge\); \/\/ (.+)$/m.exec(readFileSync(join(examples, file), 'utf8'));
  if (!match) throw new Error(`examples/${file} has no console.log(charge) with what it prints`);
  return match[1]!;
}

/** Node prints a long object over several lines: the same words on one line, as the comment has them. */
export function oneLine(stdout: string): string {
  return stdout.trim().replace(/\n\s*/g, ' ');
}
