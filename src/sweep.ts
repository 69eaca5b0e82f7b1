/**
 * The sweep (docs/holds.md): holds whose worker stopped reporting are ended by their lease,
 * with their refunds, so no credit or cap place stays locked forever, and ended holds past
 * their bounds are dropped. Any touch of the subject that finds lapsed holds has them tidied
 * first (afterDue); this sweep finds subjects nobody touches. A tidy sees at most 32 holds,
 * named by id after a read found them, and the next call goes on. A deployment-wide index
 * scores each subject by when a lease of theirs may run out; entries move by compare-and-set,
 * so many servers may sweep at once. Scripts: tidyHolds, sweepMark,
 * sweepDue.
 */
import type { Context } from './context.ts';
import { AccountNotFoundError } from './errors.ts';
import { NO_SUBJECT, sweepIndexKey, type SubjectKeys } from './redisKeys.ts';
import { count } from './rules/validate.ts';
import { sweepDue, sweepMark, tidyHolds } from './scripts/bundle.generated.ts';
import { Code } from './scripts/codes.ts';
import type { ScriptReply } from './scripts/script.ts';

export class Sweeper {
  private readonly index: string;

  constructor(private readonly ctx: Context) {
    this.index = sweepIndexKey(ctx.prefix);
  }

  /** Marks the subject for a sweep by `leaseUntil`, the lease of a hold about to open. */
  mark(subject: string, leaseUntil: number): Promise<unknown> {
    return this.ctx.runner.run(sweepMark, this.indexKeys(), { sweepIndex: this.index, subject, seenScore: '', nextScore: leaseUntil });
  }

  /** Ends one subject's lapsed holds now, and drops its ended holds past their bounds. */
  async sweepSubject(subject: string): Promise<{ ended: number; nextLeaseAt: number | null }> {
    const redisKeys = this.ctx.redisKeys(subject);
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    try {
      return await tidyAll(this.ctx, redisKeys, [], 1);
    } catch (error) {
      if (error instanceof AccountNotFoundError) return { ended: 0, nextLeaseAt: null };
      throw error;
    }
  }

  afterDue<R extends ScriptReply>(redisKeys: SubjectKeys, call: () => Promise<R>): Promise<Exclude<R, DueReply>> {
    return afterDue(this.ctx, redisKeys, call);
  }

  async sweep(options: { batch?: number; maxRounds?: number } = {}): Promise<{ subjects: number; ended: number }> {
    const batch = count('batch', options.batch ?? 100, 1, 10_000);
    const maxRounds = count('maxRounds', options.maxRounds ?? 100, 1);
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    let subjects = 0;
    let ended = 0;
    for (let round = 0; round < maxRounds; round++) {
      const reply = await this.ctx.runner.run(sweepDue, this.indexKeys(), { sweepIndex: this.index, count: batch });
      const { due } = reply;
      for (const { subject, score: seenScore } of due) {
        const swept = await this.sweepSubject(subject);
        subjects++;
        ended += swept.ended;
        await this.ctx.runner.run(sweepMark, this.indexKeys(), { sweepIndex: this.index, subject, seenScore, nextScore: swept.nextLeaseAt ?? -1 });
      }
      if (due.length < batch) break;
    }
    return { subjects, ended };
  }

  /** The index scripts name only their own key; no subject is involved. */
  private indexKeys() {
    return NO_SUBJECT;
  }
}

/** A script's answer that it found holds to tidy before it wrote anything. */
export interface DueReply {
  readonly code: typeof Code.HOLDS_DUE;
  readonly due: string[];
}

function isDue(reply: ScriptReply): reply is DueReply {
  return reply.code === Code.HOLDS_DUE;
}

function answered<R extends ScriptReply>(reply: R): reply is Exclude<R, DueReply> {
  return reply.code !== Code.HOLDS_DUE;
}

/**
 * Runs a call of the subject's; while it answers HOLDS_DUE (it found holds to tidy before it
 * wrote anything), tidies them and runs it again.
 */
export async function afterDue<R extends ScriptReply>(ctx: Context, redisKeys: SubjectKeys, call: () => Promise<R>): Promise<Exclude<R, DueReply>> {
  for (let round = 0; round < MAX_TIDY_ROUNDS; round++) {
    const reply = await call();
    if (answered(reply)) return reply;
    await tidyAll(ctx, redisKeys, isDue(reply) ? reply.due : [], 0);
  }
  throw new Error(`holds of "${redisKeys.subject}" were due again after each of ${MAX_TIDY_ROUNDS} tidies`);
}

/**
 * Tidies the given holds, then the ones each tidy names next, until none is due: at most 32
 * a script call. Each call must end or drop something; one that cannot is a fault, not a loop.
 * notices 1 (the sweep): grant.expiring notices now due are written too.
 */
async function tidyAll(ctx: Context, redisKeys: SubjectKeys, first: readonly string[], notices: 0 | 1): Promise<{ ended: number; nextLeaseAt: number | null }> {
  let due = first;
  let ended = 0;
  let nextLeaseAt: number | null = null;
  do {
    const ids = due;
    const reply = await ctx.runner.move(tidyHolds, redisKeys, { holds: ids.map((id) => redisKeys.hold(id)), notices }, undefined, redisKeys.subject);
    ended += reply.ended;
    // An account with events is swept again at its next time-driven event (docs/events.md#time-driven-events).
    const next = [reply.nextLeaseMs, reply.nextEventMs].filter((ms) => ms >= 0);
    nextLeaseAt = next.length === 0 ? null : Math.min(...next);
    due = reply.due;
    if (ids.length > 0 && reply.ended + reply.dropped === 0 && due.join() === ids.join()) {
      throw new Error(`holds of "${redisKeys.subject}" stayed due after a tidy: ${ids.join(', ')}`);
    }
  } while (due.length > 0);
  return { ended, nextLeaseAt };
}

/** Calls one answer may wait for while tidies run between them. */
const MAX_TIDY_ROUNDS = 100;

/**
 * Marks an account with events for a sweep when its cycle ends, so the next cycle starts (and
 * its cycle.started is written) though nobody touches it (docs/events.md#time-driven-events).
 */
export function markCycleEnd(ctx: Context, subject: string, cycleEnd: number): Promise<unknown> {
  return ctx.runner.run(sweepMark, NO_SUBJECT, { sweepIndex: sweepIndexKey(ctx.prefix), subject, seenScore: '', nextScore: cycleEnd });
}

/** Takes a subject out of the sweep index (its account was deleted). */
export function unmarkSubject(ctx: Context, subject: string): Promise<unknown> {
  return ctx.runner.run(sweepMark, NO_SUBJECT, { sweepIndex: sweepIndexKey(ctx.prefix), subject, seenScore: '', nextScore: -1 });
}
