/**
 * The website's low-balance notice (docs/example-service.md#website): which of the account's
 * thresholds fired in its current cycle. Written by a consumer group of its own, `dashboard`,
 * that every server runs (webhooks or not), and read by the dashboard.
 *
 * The record is a hash per account and cycle, one field per threshold that fired, so writing
 * it is idempotent and order-free: an event delivered twice, or two servers handling two
 * events of one account at once, leave the same record. It is kept 400 days, longer than any
 * cycle.
 */
import type { DeliveredEvent, Threshold, Tollgate } from 'tollgate';
import type { AppRedis } from '../redis/client.ts';

/** The consumer group that writes the record. */
export const DASHBOARD_GROUP = 'dashboard';

const KEEP_S = 400 * 86_400;

/** A threshold that fired in the cycle, with the balance it left and when. */
export interface FiredThreshold {
  threshold: Threshold;
  available: number;
  at: number;
}

export class LowBalanceRecord {
  constructor(
    private readonly redis: AppRedis,
    private readonly prefix: string,
  ) {}

  /** Notes a credits.threshold event; any other event changes nothing. */
  async note(event: DeliveredEvent): Promise<void> {
    if (event.type !== 'credits.threshold') return;
    const { threshold, available, cycle } = event.data;
    const key = this.key(event.subject, cycle);
    const fired: FiredThreshold = { threshold, available, at: event.at };
    await this.redis.atomically([
      ['HSET', key, thresholdField(threshold), JSON.stringify(fired)],
      ['EXPIRE', key, String(KEEP_S)],
    ]);
  }

  /** The thresholds that fired in the cycle, the lowest balance first. */
  async fired(accountId: string, cycle: number): Promise<FiredThreshold[]> {
    const hash = await this.redis.hGetAll(this.key(accountId, cycle));
    return Object.values(hash)
      .map((value) => JSON.parse(value) as FiredThreshold)
      .sort((x, y) => x.available - y.available || x.at - y.at);
  }

  private key(accountId: string, cycle: number): string {
    return `${this.prefix}:lowbalance:${accountId}:${cycle}`;
  }
}

function thresholdField(threshold: Threshold): string {
  return 'below' in threshold ? `below:${threshold.below}` : `usedPercent:${threshold.usedPercent}`;
}

/** Runs the `dashboard` group until stop(). */
export class LowBalanceConsumer {
  private readonly stopping = new AbortController();
  private running?: Promise<void>;

  constructor(
    private readonly tollgate: Tollgate,
    private readonly record: LowBalanceRecord,
  ) {}

  start(): void {
    // A failed write throws: tollgate delivers the event again.
    this.running ??= this.tollgate.events.consume({ group: DASHBOARD_GROUP, handler: (event) => this.record.note(event), signal: this.stopping.signal });
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }
}
