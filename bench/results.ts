/** The shape of one bench run, shared by the orchestration and the report. */
import type { MemoryResult } from "./scenarios/memory.ts";
import type { Measurement } from "./measure.ts";

export type Section = "requests" | "jobs" | "http";

export interface Row {
  section: Section;
  /** Stable id of the scenario (e.g. "admit"); `name` is what the tables show. */
  key: string;
  name: string;
  client: string;
  /** 1, or 2 for the repeated key rows. */
  run: number;
  m: Measurement;
  /** From INFO commandstats: EVAL + EVALSHA server time per script call. */
  redisUsPerCall?: number;
  /** Script calls per operation. */
  callsPerOp?: number;
  /** redis-server CPU (INFO cpu, user + system) per operation: scripts plus network I/O. */
  redisCpuUsPerOp?: number;
  /** HTTP: mean response size, headers included. */
  bytesPerResponse?: number;
}

export interface Results {
  startedAt: string;
  machine: { cpu: string; cores: number; node: string; redis: string; clients: string };
  config: { seconds: number; warmupSeconds: number; concurrency: number[]; memoryAccounts: number };
  rows: Row[];
  memory?: MemoryResult;
  /** Scenarios that could not run, and why. */
  gaps: string[];
}
