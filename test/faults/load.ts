// A steady mixed load for the fault and soak runs: charges with operation ids, items holds
// settled item by item (delivered with some of their optional credits, or failed with a
// label), budget holds spent item by item, cancels and finishes, and (when asked) cycle and
// plan changes. Every call that fails with StoreUnavailableError is retried with the same ids
// (operation id, Idempotency-Key, item id) until answered, so callers know exactly what
// happened; afterwards the stored state is audited against what they were told: nothing
// acknowledged lost, nothing applied twice.
import { randomBytes } from 'node:crypto';
import type { Hold, SettleOutcome, Tollgate } from '../../src/index.ts';
import { ChargeLedger, type JournalEntry, auditCharges, isUnavailable, untilAnswered } from './support.ts';

export interface LoadOptions {
  /** One tollgate per app server (client); workers take them in turn. */
  gates: Tollgate[];
  accounts: string[];
  /** Concurrent callers charging credits. */
  chargeWorkers?: number;
  /** Concurrent workers opening and settling holds. */
  holdWorkers?: number;
  /** Also start new cycles and change plans now and then (the soak does; a fixed clock needs not). */
  cycleChanges?: boolean;
  /** Prefix of operation ids and idempotency keys, unique per process. */
  tag?: string;
  /** Pick the next random number (so a run can be replayed from a seed). */
  random?: () => number;
  /** Now and then walk away from a hold without ending it, as a crashed worker would (the sweep reclaims it). */
  abandonHolds?: boolean;
}

/** What a hold's worker was told. */
export interface HoldTally {
  accountId: string;
  holdId: string;
  kind: 'items' | 'budget';
  /** Credits that acknowledged settlements spent. */
  ackedSpend: number;
  /** Settlements acknowledged as accepted (once each, replays included). */
  ackedSettlements: number;
  /** Left without being ended, for the lease sweep to reclaim. */
  abandoned?: boolean;
  /** The last few outcomes, for a failure message. */
  trace: string[];
}

function note(tally: HoldTally, event: string): void {
  tally.trace.push(event);
  if (tally.trace.length > 12) tally.trace.shift();
}

export interface LoadFigures {
  operations: number;
  /** Calls that failed with StoreUnavailableError (each retried with the same ids). */
  unavailable: number;
  charges: number;
  holdsOpened: number;
  settlements: number;
  /** Settlements acknowledged as replays after an attempt had failed: that attempt had applied. */
  settlementsAppliedDespiteError: number;
  cancels: number;
  cycleChanges: number;
  abandoned: number;
}

export class Workload {
  readonly ledger = new ChargeLedger();
  readonly holds = new Map<string, HoldTally>();
  readonly figures: LoadFigures = {
    operations: 0,
    unavailable: 0,
    charges: 0,
    holdsOpened: 0,
    settlements: 0,
    settlementsAppliedDespiteError: 0,
    cancels: 0,
    cycleChanges: 0,
    abandoned: 0,
  };
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
    const { chargeWorkers = 4, holdWorkers = 2 } = this.options;
    for (let w = 0; w < chargeWorkers; w++) this.workers.push(this.guard(this.chargeLoop(w)));
    for (let w = 0; w < holdWorkers; w++) this.workers.push(this.guard(this.holdLoop(chargeWorkers + w)));
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
  private async answered<T>(attempt: () => Promise<T>): Promise<{ value: T; failures: number }> {
    const settled = await untilAnswered(attempt);
    this.figures.unavailable += settled.failures;
    this.figures.operations++;
    return settled;
  }

  private async chargeLoop(worker: number): Promise<void> {
    while (this.running) {
      const tg = this.gate(worker);
      const accountId = this.pick(this.options.accounts);
      const operationId = this.nextId('op');
      const required = 1;
      const optional = this.pick([0, 0, 1, 2]);
      const { value, failures } = await this.answered(() => tg.credits.charge(accountId, { required, optional, operationId }));
      this.ledger.record(operationId, value, failures);
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

  private async holdLoop(worker: number): Promise<void> {
    while (this.running) {
      const tg = this.gate(worker);
      const accountId = this.pick(this.options.accounts);
      const budget = this.random() < 0.3;
      const key = this.nextId('idem');
      const { value: opened } = await this.answered(() =>
        budget
          ? tg.holds.openBudget(accountId, { amount: 5 + Math.floor(this.random() * 20), idempotency: { key, body: { budget: key } } })
          : tg.holds.open(accountId, {
              items: 10 + Math.floor(this.random() * 60),
              perItem: { required: 1, optional: this.pick([0, 1, 2]) },
              idempotency: { key, body: { items: key } },
            }),
      );
      if (!opened.ok) continue;
      this.figures.holdsOpened++;
      await this.work(tg, accountId, opened.hold);
    }
  }

  /** Settles items until the hold ends, is given up (cancel / finish), is abandoned or the load stops. */
  private async work(tg: Tollgate, accountId: string, hold: Hold): Promise<void> {
    const tally: HoldTally = { accountId, holdId: hold.id, kind: hold.kind, ackedSpend: 0, ackedSettlements: 0, trace: [] };
    this.holds.set(`${accountId}/${hold.id}`, tally);
    for (let item = 0; ; item++) {
      const r = this.random();
      if (!this.running || r < 0.02) {
        await this.answered(() => tg.holds.cancel(accountId, hold.id));
        this.figures.cancels++;
        return;
      }
      if (r < 0.03) {
        await this.answered(() => tg.holds.finish(accountId, hold.id));
        return;
      }
      if (this.options.abandonHolds && r < 0.034) {
        tally.abandoned = true;
        this.figures.abandoned++;
        return;
      }
      const itemId = `${hold.id}-${item}`;
      let spend: number;
      let settle: () => Promise<SettleOutcome>;
      if (hold.kind === 'budget') {
        spend = this.pick([1, 1, 0, 2]);
        settle = () => tg.holds.spend(accountId, hold.id, { itemId, amount: spend });
      } else {
        const failed = this.pick([undefined, undefined, undefined, 'a', 'b']);
        const optionalSpent = failed ? 0 : Math.floor(this.random() * (hold.perItem.optional + 1));
        spend = failed ? 0 : hold.perItem.required + optionalSpent;
        settle = () => tg.holds.settle(accountId, hold.id, { itemId, failed, optionalSpent });
      }
      // The item id makes a retry after a lost reply a replay: the worker always learns the outcome.
      const { value: outcome, failures } = await this.answered(settle);
      this.figures.settlements++;
      note(
        tally,
        `${itemId} ${outcome.accepted ? (outcome.replayed ? 'replayed' : 'ok') : outcome.reason} +${spend}${failures ? ` after ${failures} failures` : ''}`,
      );
      if (outcome.accepted && outcome.replayed && failures > 0) this.figures.settlementsAppliedDespiteError++;
      if (outcome.accepted) {
        tally.ackedSettlements++;
        tally.ackedSpend += spend;
        if (outcome.hold.status !== 'open') return;
      } else if (outcome.reason === 'budget_exhausted') {
        await this.answered(() => tg.holds.finish(accountId, hold.id));
        return;
      } else {
        return;
      }
    }
  }
}

export interface WorkloadAudit {
  acknowledgedCharges: number;
  /** Acknowledged charges or settlements missing from the stored state (must be 0). */
  lost: number;
  /** Charges applied twice, or holds that spent more than their acknowledged settlements (must be 0). */
  doubled: number;
  /** Charges in the journal no caller was told about (must be 0: every charge is retried to an answer). */
  unacknowledged: number;
  /** Holds stored that no worker was told were opened (must be 0: every open is retried to an answer). */
  unacknowledgedHolds: number;
  /** What was lost or doubled, for the failure message. */
  details: string[];
}

/**
 * Audits a finished load against the stored journals and holds of its accounts: every
 * acknowledged charge exactly once, every hold's spent and settled exactly what its worker
 * was told, its journal entries adding up to its record, and no hold nobody was told of.
 */
export function auditWorkload(
  load: { ledger: ChargeLedger; holds: Map<string, HoldTally> },
  journals: Map<string, JournalEntry[]>,
  storedHolds: Map<string, Hold>,
): WorkloadAudit {
  const charges = auditCharges([...journals.values()].flat(), load.ledger);
  let lost = charges.lost;
  let doubled = charges.doubled;
  const details = [...charges.details];
  for (const tally of load.holds.values()) {
    const hold = storedHolds.get(`${tally.accountId}/${tally.holdId}`);
    if (!hold) {
      lost++;
      details.push(`hold ${tally.accountId}/${tally.holdId} is not stored`);
      continue;
    }
    const entries = (journals.get(tally.accountId) ?? []).filter((e) => e.ref === tally.holdId);
    const sum = (kinds: string[]) => entries.filter((e) => kinds.includes(e.kind)).reduce((total, e) => total + e.amount, 0);
    const journal = { reserved: sum(['reserve']), spent: sum(['spend']), refunded: sum(['refund', 'refund_ended']) };
    const seen = `hold ${tally.holdId}: spent ${hold.spent}, settled ${hold.settled}, journal ${JSON.stringify(journal)}; acknowledged ${tally.ackedSpend} / ${tally.ackedSettlements}; last: ${tally.trace.join(' | ')}`;
    if (hold.spent < tally.ackedSpend || hold.settled < tally.ackedSettlements) {
      lost++;
      details.push(`lost: ${seen}`);
    }
    if (hold.spent > tally.ackedSpend || hold.settled > tally.ackedSettlements) {
      doubled++;
      details.push(`doubled: ${seen}`);
    }
    if (journal.reserved !== hold.reserved || journal.spent !== hold.spent || journal.refunded !== hold.refunded) {
      doubled++;
      details.push(`journal and record disagree: ${seen}`);
    }
  }
  const unacknowledgedHolds = [...storedHolds.keys()].filter((key) => !load.holds.has(key));
  for (const key of unacknowledgedHolds) details.push(`hold no worker was told of: ${key}`);
  return {
    acknowledgedCharges: charges.acknowledged,
    lost,
    doubled,
    unacknowledged: charges.unacknowledged,
    unacknowledgedHolds: unacknowledgedHolds.length,
    details: details.slice(0, 20),
  };
}
