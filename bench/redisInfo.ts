/**
 * What Redis reports about itself: time spent in scripts (INFO commandstats) and memory
 * (INFO memory), read over the bench's own admin connection.
 */
import type { BenchClient } from './clients.ts';

function field(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

/** Zeroes INFO commandstats. */
export async function resetStats(admin: BenchClient): Promise<void> {
  await admin.command(['CONFIG', 'RESETSTAT']);
}

/**
 * Calls and server µs of scripts (FCALL, the library's default, EVALSHA and EVAL) since the
 * last reset, all scripts together (the time
 * includes the script's own redis.call commands; INFO counts those under their names too, so
 * the other rows of commandstats cannot tell a client's commands from a script's).
 */
export async function scriptStats(admin: BenchClient): Promise<{ calls: number; usec: number }> {
  const info = String(await admin.command(['INFO', 'commandstats']));
  let calls = 0;
  let usec = 0;
  for (const [, c, u] of info.matchAll(/^cmdstat_(?:evalsha|eval|fcall)(?:_ro)?:calls=(\d+),usec=(\d+)/gm)) {
    calls += Number(c);
    usec += Number(u);
  }
  return { calls, usec };
}

/** CPU time redis-server has used (user + system, all threads), in µs. */
export async function serverCpuUs(admin: BenchClient): Promise<number> {
  const info = String(await admin.command(['INFO', 'cpu']));
  return (Number(field(info, 'used_cpu_user')) + Number(field(info, 'used_cpu_sys'))) * 1e6;
}

export async function usedMemory(admin: BenchClient): Promise<number> {
  return Number(field(String(await admin.command(['INFO', 'memory'])), 'used_memory'));
}

export async function serverVersion(admin: BenchClient): Promise<string> {
  return field(String(await admin.command(['INFO', 'server'])), 'redis_version') ?? '?';
}
