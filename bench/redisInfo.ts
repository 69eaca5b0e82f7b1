/**
 * What Redis reports about itself: time spent in scripts (INFO commandstats) and memory
 * (INFO memory), read over the bench's own admin connection.
 */
import type { BenchClient } from "./clients.ts";

function field(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)$`, "m").exec(info)?.[1]?.trim();
}

/** Zeroes INFO commandstats. */
export async function resetStats(admin: BenchClient): Promise<void> {
  await admin.command(["CONFIG", "RESETSTAT"]);
}

/** Calls and server time of EVAL and EVALSHA (all scripts) since the last reset. */
export async function scriptStats(admin: BenchClient): Promise<{ calls: number; usec: number }> {
  const info = String(await admin.command(["INFO", "commandstats"]));
  let calls = 0;
  let usec = 0;
  for (const name of ["eval", "evalsha"]) {
    const stats = field(info, `cmdstat_${name}`);
    if (!stats) continue;
    calls += Number(/calls=(\d+)/.exec(stats)?.[1] ?? 0);
    usec += Number(/usec=(\d+)/.exec(stats)?.[1] ?? 0);
  }
  return { calls, usec };
}

/** CPU time redis-server has used (user + system, all threads), in µs. */
export async function serverCpuUs(admin: BenchClient): Promise<number> {
  const info = String(await admin.command(["INFO", "cpu"]));
  return (Number(field(info, "used_cpu_user")) + Number(field(info, "used_cpu_sys"))) * 1e6;
}

export async function usedMemory(admin: BenchClient): Promise<number> {
  return Number(field(String(await admin.command(["INFO", "memory"])), "used_memory"));
}

export async function serverVersion(admin: BenchClient): Promise<string> {
  return field(String(await admin.command(["INFO", "server"])), "redis_version") ?? "?";
}
