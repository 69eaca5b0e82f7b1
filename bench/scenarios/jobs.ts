/**
 * Bulk jobs (SPEC §6): creating one must cost the same whatever N is (one reservation, no
 * per-video work), and each recorded result is one script. The bench plan's cap is high
 * enough that no run reaches it, so every create takes the reserving path.
 */
import type { Tollgate } from "../../src/index.ts";
import { ACCOUNTS, accountOf, parallel } from "../fixture.ts";
import type { Scenario } from "./requests.ts";

export const JOB_SCENARIO = {
  reserve1: "jobs.reserve N=1",
  reserve5000: "jobs.reserve N=5,000",
  recordResult: "jobs.recordResult",
} as const;

export function jobScenarios(tg: Tollgate): Record<keyof typeof JOB_SCENARIO, Scenario> {
  const reserve = (videos: number) => async (i: number) => {
    const outcome = await tg.jobs.reserve(accountOf(i), { videos });
    if (!outcome.ok) throw new Error(`jobs.reserve refused: ${outcome.reason}`);
  };

  // One open 5,000-video job per account, opened afresh for each cell: a cell records far
  // fewer than 5,000 results per account, so every measured result is accepted.
  const openJobs: string[] = [];
  return {
    reserve1: { name: JOB_SCENARIO.reserve1, op: reserve(1) },
    reserve5000: { name: JOB_SCENARIO.reserve5000, op: reserve(5_000) },
    recordResult: {
      name: JOB_SCENARIO.recordResult,
      prepare: () =>
        parallel(ACCOUNTS, 64, async (i) => {
          const outcome = await tg.jobs.reserve(accountOf(i), { videos: 5_000 });
          if (!outcome.ok) throw new Error(`jobs.reserve refused: ${outcome.reason}`);
          openJobs[i] = outcome.job.id;
        }),
      op: async (i) => {
        const outcome = await tg.jobs.recordResult(accountOf(i), openJobs[i % ACCOUNTS]!, { transcript: "delivered" });
        if (!outcome.accepted) throw new Error(`jobs.recordResult refused: ${outcome.reason}`);
      },
    },
  };
}
