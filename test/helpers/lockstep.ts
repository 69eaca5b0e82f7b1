// Redis and the model in lockstep on one subject's limits: each step waits, then admits at a
// cost (0: peeks), on both, and the answers must be equal (buckets, shadow windows).
import { expect } from 'vitest';
import type { LimitTarget } from '../../src/index.ts';
import type { TestGate } from './tollgate.ts';

/** One step: a pause in ms, then an admit of `cost` (0: a peek). */
export interface LimitStep {
  pause: number;
  cost: number;
}

export async function limitsInLockstep(redis: TestGate, memory: TestGate, subject: string, target: LimitTarget, steps: readonly LimitStep[]): Promise<void> {
  for (const { pause, cost } of steps) {
    redis.clock.advance(pause);
    memory.clock.advance(pause);
    if (cost === 0) expect(await redis.tg.limits.peek(subject, target)).toEqual(await memory.tg.limits.peek(subject, target));
    else expect(await redis.tg.limits.admit(subject, { ...target, cost })).toEqual(await memory.tg.limits.admit(subject, { ...target, cost }));
  }
}
