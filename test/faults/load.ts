// A steady mixed load for the fault and soak runs: charges with operation ids, bulk jobs with
// their results, comments collections with their pages, cancels and finishes, and (when asked)
// cycle and plan changes. It keeps what callers were told, so that afterwards the stored state
// can be audited against it: nothing acknowledged lost, nothing applied twice.
import { randomBytes } from 'node:crypto';
import type { Job, Tollgate } from '../../src/index.ts';
import { ChargeLedger, type JournalEntry, auditCharges, isUnavailable, untilAnswered } from './support.ts';

export interface LoadOptions {
  /** One tollgate per app server (client); workers take them in turn. */
  gates: Tollgate[];
  accounts: string[];
  /** Concurrent callers charging credits. */
  chargeWorkers?: number;
  /** Concurrent workers running jobs and collections. */
  jobWorkers?: number;
  /** Also start new cycles and change plans now and then (the soak does; a fixed clock needs not). */
  cycleChanges?: boolean;
  /** Prefix of operation ids and idempotency keys, unique per process. */
  tag?: string;
  /** Pick the next random number (so a run can be replayed from a seed). */
  random?: () => number;
  /** Now and then walk away from a job without ending it, as a crashed worker would (the sweep reclaims it). */
  abandonJobs?: boolean;
}

/** What a job's worker was told, per job: the results it may count on and those left in doubt. */
export interface JobTally {
  accountId: string;
  jobId: string;
  kind: 'bulk' | 'collection';
  /** Credits that acknowledged results spent: 1 per delivered transcript / nonempty page. */
  ackedSpend: number;
  /** Results whose reply was lost (StoreUnavailableError): they may or may not have counted. */
  doubtfulSpend: number;
  ackedResults: number;
  doubtfulResults: number;
  /** Left without being ended, for the lease sweep to reclaim. */
  abandoned?: boolean;
  /** The last few outcomes, for a failure message. */
  trace: string[];
}

function note(tally: JobTally, event: string): void {
  tally.trace.push(event);
  if (tally.trace.length > 12) tally.trace.shift();
}

export interface LoadFigures {
  operations: number;
  /** Calls that failed with StoreUnavailableError (each retried or counted as in doubt). */
  unavailable: number;
  charges: number;
  jobsCreated: number;
  results: number;
  cancels: number;
  cycleChanges: number;
  abandoned: number;
}

export class Workload {
  readonly ledger = new ChargeLedger();
  readonly jobs = new Map<string, JobTally>();
  readonly figures: LoadFigures = { operations: 0, unavailable: 0, charges: 0, jobsCreated: 0, results: 0, cancels: 0, cycleChanges: 0, abandoned: 0 };
  /** Errors other than StoreUnavailableError: any of them fails the run. */
  readonly errors: unknown[] = [];
  private running = false;
  private workers: Promise<void>[] = [];
  private readonly tag: string;
  private readonly random: () => number;
  private sequence = 0;

  constructor(private readonly options: LoadOptions) {
    this.tag = options.tag ?? randomBytes(3).toString('hex');
    this.random = options.random ?? Math.random;
  }

  start(): void {
    this.running = true;
    const { chargeWorkers = 4, jobWorkers = 2 } = this.options;
    for (let w = 0; w < chargeWorkers; w++) this.workers.push(this.guard(this.chargeLoop(w)));
    for (let w = 0; w < jobWorkers; w++) this.workers.push(this.guard(this.jobLoop(chargeWorkers + w)));
  }

  /** Stops issuing new operations and waits for those in flight (retries included). */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
    this.workers = [];
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Waits (bounded by real time) until n more operations have completed. */
  async progress(n: number, timeoutMs = 15_000): Promise<void> {
    const until = this.figures.operations + n;
    const deadline = Date.now() + timeoutMs;
    while (this.figures.operations < until && this.running) {
      if (Date.now() > deadline) throw new Error(`load made no progress for ${timeoutMs} ms (${this.figures.operations}/${until})`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  private async guard(loop: Promise<void>): Promise<void> {
    try {
      await loop;
    } catch (error) {
      this.errors.push(error);
      this.running = false;
    }
  }

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)]!;
  }

  private gate(worker: number): Tollgate {
    const { gates } = this.options;
    return gates[worker % gates.length]!;
  }

  private nextId(kind: string): string {
    this.sequence += 1;
    return `${this.tag}-${kind}-${this.sequence}`;
  }

  /** untilAnswered, counting the failed attempts. */
  private async answered<T>(attempt: () => Promise<T>): Promise<T> {
    const { value, failures } = await untilAnswered(attempt);
    this.figures.unavailable += failures;
    this.figures.operations++;
    return value;
  }

  private async chargeLoop(worker: number): Promise<void> {
    while (this.running) {
      const tg = this.gate(worker);
      const accountId = this.pick(this.options.accounts);
      const operationId = this.nextId('op');
      const required = 1;
      const optional = this.pick([0, 0, 1, 2]);
      const { value, failures } = await untilAnswered(() => tg.credits.charge(accountId, { required, optional, operationId }));
      this.ledger.record(operationId, value, failures);
      this.figures.unavailable += failures;
      this.figures.operations++;
      this.figures.charges++;
      if (this.options.cycleChanges && this.random() < 0.004) await this.changeCycle(tg, accountId);
    }
  }

  private async changeCycle(tg: Tollgate, accountId: string): Promise<void> {
    // Plan changes are idempotent; a new cycle is not, so it is tried once and may be in doubt.
    if (this.random() < 0.5) {
      await this.answered(() => tg.accounts.changePlan(accountId, this.pick(['pro', 'business']), { startNewCycle: false }));
    } else {
      try {
        await tg.accounts.startCycle(accountId);
      } catch (error) {
        if (!isUnavailable(error)) throw error;
        this.figures.unavailable++;
      }
      this.figures.operations++;
    }
    this.figures.cycleChanges++;
  }

  private async jobLoop(worker: number): Promise<void> {
    while (this.running) {
      const tg = this.gate(worker);
      const accountId = this.pick(this.options.accounts);
      const collection = this.random() < 0.3;
      const key = this.nextId('idem');
      const created = await this.answered(() =>
        collection
          ? tg.jobs.reserveCollection(accountId, { limit: 5 + Math.floor(this.random() * 20), idempotency: { key, body: { collection: key } } })
          : tg.jobs.reserve(accountId, { videos: 10 + Math.floor(this.random() * 60), includeComments: this.random() < 0.5, idempotency: { key, body: { bulk: key } } }),
      );
      if (!created.ok) continue;
      this.figures.jobsCreated++;
      await this.work(tg, accountId, created.job);
    }
  }

  /** Records results until the job ends, is given up (cancel / finish) or the load stops. */
  private async work(tg: Tollgate, accountId: string, job: Job): Promise<void> {
    const tally: JobTally = { accountId, jobId: job.id, kind: job.kind, ackedSpend: 0, doubtfulSpend: 0, ackedResults: 0, doubtfulResults: 0, trace: [] };
    this.jobs.set(`${accountId}/${job.id}`, tally);
    for (;;) {
      const r = this.random();
      if (!this.running || r < 0.02) {
        await this.answered(() => tg.jobs.cancel(accountId, job.id));
        this.figures.cancels++;
        return;
      }
      if (r < 0.03) {
        await this.answered(() => tg.jobs.finish(accountId, job.id));
        return;
      }
      if (this.options.abandonJobs && r < 0.034) {
        tally.abandoned = true;
        this.figures.abandoned++;
        return;
      }
      let spend: number;
      let settle: () => ReturnType<Tollgate['jobs']['recordResult']>;
      if (job.kind === 'collection') {
        const page = this.pick(['nonempty', 'nonempty', 'empty', 'failed'] as const);
        spend = page === 'nonempty' ? 1 : 0;
        settle = () => tg.jobs.recordPage(accountId, job.id, page);
      } else {
        const transcript = this.pick(['delivered', 'delivered', 'delivered', 'video_unavailable', 'no_captions'] as const);
        const commentPage = job.includeComments ? this.pick(['nonempty', 'nonempty', 'empty', 'failed'] as const) : undefined;
        spend = transcript === 'delivered' ? 1 + (commentPage === 'nonempty' ? 1 : 0) : 0;
        settle = () => tg.jobs.recordResult(accountId, job.id, { transcript, commentPage });
      }
      // A result carries no id of its own, so a lost reply is not retried: it stays in doubt.
      let outcome;
      try {
        outcome = await settle();
        note(tally, `${outcome.accepted ? 'ok' : 'refused'} +${spend}`);
      } catch (error) {
        note(tally, `in doubt +${spend}: ${(error as Error).message}`);
        if (!isUnavailable(error)) throw error;
        this.figures.unavailable++;
        this.figures.operations++;
        tally.doubtfulResults++;
        tally.doubtfulSpend += spend;
        continue;
      }
      this.figures.operations++;
      this.figures.results++;
      if (!outcome.accepted) return;
      tally.ackedResults++;
      tally.ackedSpend += spend;
      if (outcome.job.status === 'completed' || outcome.job.status === 'canceled') return;
    }
  }
}

export interface WorkloadAudit {
  acknowledgedCharges: number;
  /** Acknowledged charges or job spends missing from the stored state (must be 0). */
  lost: number;
  /** Charges applied twice, or jobs that spent more than their results allow (must be 0). */
  doubled: number;
  /** Charges in the journal no caller was told about (must be 0: every charge is retried to an answer). */
  unacknowledged: number;
  /** Job results whose reply was lost and that did count. */
  doubtfulResultsCounted: number;
  /** What was lost or doubled, for the failure message. */
  details: string[];
}

/**
 * Audits a finished load against the stored journals and jobs of its accounts: every
 * acknowledged charge exactly once, every job between its acknowledged and possible spend.
 */
export function auditWorkload(
  load: { ledger: ChargeLedger; jobs: Map<string, JobTally> },
  journals: Map<string, JournalEntry[]>,
  storedJobs: Map<string, Job>,
): WorkloadAudit {
  const charges = auditCharges([...journals.values()].flat(), load.ledger);
  let lost = charges.lost;
  let doubled = charges.doubled;
  let doubtfulResultsCounted = 0;
  const details = [...charges.details];
  for (const tally of load.jobs.values()) {
    const job = storedJobs.get(`${tally.accountId}/${tally.jobId}`);
    if (!job) {
      lost++;
      details.push(`job ${tally.accountId}/${tally.jobId} is not stored`);
      continue;
    }
    const results = job.kind === 'bulk' ? job.delivered + job.failed.videoUnavailable + job.failed.noCaptions : job.commentPages + job.commentMisses;
    const journalSpend = (journals.get(tally.accountId) ?? []).filter((e) => e.kind === 'spend' && e.ref === tally.jobId).reduce((sum, e) => sum + e.amount, 0);
    const seen = `job ${tally.jobId}: spent ${job.spent} (journal ${journalSpend}), results ${results}; acknowledged ${tally.ackedSpend} / ${tally.ackedResults}, in doubt ${tally.doubtfulSpend} / ${tally.doubtfulResults}`;
    if (job.spent < tally.ackedSpend || results < tally.ackedResults) {
      lost++;
      details.push(`lost: ${seen}`);
    }
    if (job.spent > tally.ackedSpend + tally.doubtfulSpend || results > tally.ackedResults + tally.doubtfulResults || journalSpend !== job.spent) {
      doubled++;
      details.push(`doubled: ${seen}; last: ${tally.trace.join(' | ')}`);
    }
    doubtfulResultsCounted += results - tally.ackedResults;
  }
  return { acknowledgedCharges: charges.acknowledged, lost, doubled, unacknowledged: charges.unacknowledged, doubtfulResultsCounted, details: details.slice(0, 20) };
}
