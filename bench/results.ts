/** The shape of one bench run, shared by the orchestration, the targets and the report. */
import type { MemoryResult } from './scenarios/memory.ts';
import type { EventsResult } from './scenarios/events.ts';
import type { Measurement } from './measure.ts';

/** inprocess: limits in this process's memory, no Redis (client "memory"). */
export type Section = 'requests' | 'holds' | 'grants' | 'http' | 'inprocess';

export interface Row {
  section: Section;
  /** Stable id of the scenario (e.g. "admit"); `name` is what the tables show. */
  key: string;
  name: string;
  client: string;
  /** 1, or 2 for the repeated key rows. */
  run: number;
  m: Measurement;
  /** From INFO commandstats over the measured time: EVAL + EVALSHA calls and their server µs. */
  scriptCalls?: number;
  scriptUsec?: number;
  /** redis-server CPU (INFO cpu, user + system) per operation: scripts plus network I/O. */
  redisCpuUsPerOp?: number;
  /** HTTP: mean response size, headers included. */
  bytesPerResponse?: number;
}

export interface Results {
  startedAt: string;
  machine: { cpu: string; cores: number; node: string; redis: string; clients: string };
  /** 1-minute load average when the run started and when it ended: how quiet the machine was. */
  load?: { start: number; end: number };
  config: { seconds: number; warmupSeconds: number; concurrency: number[]; memoryAccounts: number };
  /** The command line that produced the run, environment included. */
  command: string;
  rows: Row[];
  memory?: MemoryResult;
  /** Events delivered by one consumer, per client (bench/scenarios/events.ts). */
  events?: EventsResult[];
  /** Scenarios that could not run, and why. */
  gaps: string[];
}

/** Script µs per call of a row (all its scripts together); undefined without script calls. */
export function usPerCall(row: Row): number | undefined {
  return row.scriptCalls ? row.scriptUsec! / row.scriptCalls : undefined;
}

/**
 * commandstats times a script by the wall clock, INFO cpu by CPU time. On a quiet machine a
 * cell's script time per operation stays below redis-server's CPU per operation (which adds
 * parsing and network I/O); above it, redis-server lost the core mid-script to another process
 * and the cell's script µs are inflated: the report marks such cells.
 */
export function noisy(row: Row): boolean {
  if (!row.scriptUsec || row.redisCpuUsPerOp === undefined) return false;
  return row.scriptUsec / row.m.ops > row.redisCpuUsPerOp * 1.05;
}
