/**
 * SCAN across every server of the store (each master of a cluster), a page at a time, for
 * accounts.list and accounts.delete. A cursor names the server and its own SCAN cursor:
 * '<server>.<cursor>'; a page ends early at the end of a server, and null is the end.
 */
import { InvalidInputError } from './errors.ts';
import type { ScriptRunner } from './scripts/runner.ts';

/** One page of keys matching `match`, and the cursor of the next (null: the end). */
export async function scanPage(
  runner: ScriptRunner,
  match: string,
  cursor: string | null | undefined,
  count: number,
  type?: string,
): Promise<{ keys: string[]; cursor: string | null }> {
  const servers = await runner.servers();
  let [server, at] = parseCursor(cursor ?? '0.0', servers.length);
  const keys: string[] = [];
  while (keys.length < count && server < servers.length) {
    const words = ['SCAN', at, 'MATCH', match, 'COUNT', String(Math.max(count, 100))];
    if (type) words.push('TYPE', type);
    const [next, found] = (await servers[server]!(words)) as [string, string[]];
    keys.push(...found.map(String));
    at = String(next);
    if (at === '0') server += 1;
  }
  return { keys, cursor: server < servers.length ? `${server}.${at}` : null };
}

/** Every key matching `match`, on every server. */
export async function scanAll(runner: ScriptRunner, match: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | null = '0.0';
  while (cursor !== null) {
    const page: { keys: string[]; cursor: string | null } = await scanPage(runner, match, cursor, 1000);
    keys.push(...page.keys);
    cursor = page.cursor;
  }
  return keys;
}

function parseCursor(cursor: unknown, servers: number): [number, string] {
  const m = typeof cursor === 'string' ? /^(\d+)\.(\d+)$/.exec(cursor) : null;
  if (!m || Number(m[1]) > servers) throw new InvalidInputError(`cursor must be one accounts.list returned (got ${JSON.stringify(cursor)})`);
  return [Number(m[1]), m[2]!];
}

/** A key pattern's text with glob characters escaped. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
