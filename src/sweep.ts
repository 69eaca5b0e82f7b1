/**
 * The sweep: holds whose worker stopped reporting are ended by their lease, with
 * their refunds, so no credit or cap place stays locked forever. Any touch of the subject
 * ends its lapsed holds; this sweep finds subjects nobody touches. A deployment-wide index
 * scores each subject by when a lease of theirs may run out; entries move by compare-and-set,
 * so many servers may sweep at once. Scripts: sweepHolds, sweepMark,
 * sweepDue.
 */
import type { Context } from "./context.ts";
import { AccountNotFoundError } from "./errors.ts";
import { sweepIndexKey } from "./redisKeys.ts";
import { sweepDue, sweepHolds, sweepMark } from "./scripts/bundle.generated.ts";
import { count } from "./validate.ts";

export class Sweeper {
  private readonly index: string;

  constructor(private readonly ctx: Context) {
    this.index = sweepIndexKey(ctx.prefix);
  }

  /** Marks the subject for a sweep one lease from now (before a hold opens). */
  mark(subject: string): Promise<unknown[]> {
    const now = this.ctx.clock ? Math.floor(this.ctx.clock()) : Date.now();
    return this.ctx.runner.run(sweepMark, this.indexKeys(), { sweepIndex: this.index, subject, seenScore: "", nextScore: now + this.ctx.leaseMs });
  }

  /** Ends one subject's lapsed holds now. */
  async sweepSubject(subject: string): Promise<{ ended: number; nextLeaseAt: number | null }> {
    const keys = this.ctx.keys(subject);
    try {
      const reply = await this.ctx.runner.move(sweepHolds, keys, {}, undefined, keys.subject);
      const next = Number(reply[2]);
      return { ended: Number(reply[1]), nextLeaseAt: next < 0 ? null : next };
    } catch (error) {
      if (error instanceof AccountNotFoundError) return { ended: 0, nextLeaseAt: null };
      throw error;
    }
  }

  async sweep(options: { batch?: number; maxRounds?: number } = {}): Promise<{ subjects: number; ended: number }> {
    const batch = count("batch", options.batch ?? 100, 1, 10_000);
    const maxRounds = count("maxRounds", options.maxRounds ?? 100, 1);
    let subjects = 0;
    let ended = 0;
    for (let round = 0; round < maxRounds; round++) {
      const reply = await this.ctx.runner.run(sweepDue, this.indexKeys(), { sweepIndex: this.index, count: batch });
      const due: Array<[string, string]> = [];
      for (let i = 2; i < reply.length; i += 2) due.push([String(reply[i]), String(reply[i + 1])]);
      for (const [subject, seenScore] of due) {
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

const NO_SUBJECT = {
  subject: "",
  account: "",
  cycles: "",
  journal: "",
  history: "",
  holdsActive: "",
  holdList: "",
  holdPrefix: "",
};
