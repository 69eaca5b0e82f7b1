/**
 * The rules of events (docs/events.md), shared by the library on Redis, the model and the
 * memory tollgate: thresholds and their checks, the event types, the options of
 * createTollgate's `events` and of events.consume, and the one codec of a stored threshold
 * list ('b<n>,u<p>': lua/lib/events.lua reads the same text).
 */
import { InvalidInputError } from '../errors.ts';
import { count, MAX_ALLOWANCE } from './validate.ts';
import type { GrantKind } from './grants.ts';

/**
 * A balance threshold: `{ below: n }` holds while available credits are <= n;
 * `{ usedPercent: p }` while the cycle's spent + held is >= p% of its allowance (never with an
 * allowance of 0). It fires (credits.threshold) when it starts to hold, and re-arms
 * (credits.restored) when it stops.
 */
export type Threshold = { below: number } | { usedPercent: number };

/** A plan's `events`: it makes its accounts write events, with these thresholds. */
export interface PlanEvents {
  /** At most MAX_THRESHOLDS; may be empty (events without thresholds: cycles, holds, depletion). */
  thresholds: Threshold[];
}

/** Thresholds one plan or account may have. */
export const MAX_THRESHOLDS = 8;

/** createTollgate's `events`: the deployment-wide settings. */
export interface EventsOptions {
  /** How long before a grant expires its grant.expiring event comes. Default 3 days. */
  expiringNoticeMs?: number;
  /** Events one subject's outbox keeps until every group has handled them; more are dropped and counted. Default 1,000. */
  maxPerSubject?: number;
}

/** What a threshold crossing reports. */
export interface ThresholdData {
  /** The threshold that now holds (credits.threshold) or no longer holds (credits.restored). */
  threshold: Threshold;
  /** Credits available after the step. */
  available: number;
  /** The current cycle's id. */
  cycle: number;
}

/** Every event type and its `data`. */
export interface EventDataByType {
  /** A threshold started to hold: available fell to or below `below`, or the cycle's use reached `usedPercent`. */
  'credits.threshold': ThresholdData;
  /** Available credits reached 0. */
  'credits.depleted': { available: number; cycle: number };
  /**
   * A refund, a grant or a new cycle raised available above a threshold that had fired: it
   * re-arms. `threshold` is null when available rose from 0 (after credits.depleted).
   */
  'credits.restored': { threshold: Threshold | null; available: number; cycle: number };
  /** A billing cycle started: by a rollover, startCycle or a plan change with a new cycle. */
  'cycle.started': { cycle: number; start: number; end: number; allowance: number };
  /** A credit grant was added (credits.grant, or credits.adjust by +n: kind adjustment); expiresAt null: never. */
  'grant.added': { grantId: string; kind: GrantKind; amount: number; effectiveAt: number; expiresAt: number | null };
  /** A grant expires within events.expiringNoticeMs (the sweep writes it once); remaining: what it has left. */
  'grant.expiring': { grantId: string; expiresAt: number; remaining: number };
  /** A grant expired: `expired` is what it had left. */
  'grant.expired': { grantId: string; expired: number; expiresAt: number };
  /** A grant was voided: `voided` is what it had left. */
  'grant.voided': { grantId: string; voided: number };
  /** A hold ended by its lease: its worker stopped reporting. refunded: all it did not spend. */
  'hold.lapsed': { holdId: string; reserved: number; spent: number; refunded: number };
}

/** An event type. */
export type TollgateEventType = keyof EventDataByType;

/** Each event type once: a type added to EventDataByType and not here fails to compile. */
const EVENT_TYPE_SET: Record<TollgateEventType, true> = {
  'credits.threshold': true,
  'credits.depleted': true,
  'credits.restored': true,
  'cycle.started': true,
  'grant.added': true,
  'grant.expiring': true,
  'grant.expired': true,
  'grant.voided': true,
  'hold.lapsed': true,
};

/** The event types, in the order docs/events.md lists them (test/docs.test.ts checks it names each). */
export const EVENT_TYPES = Object.keys(EVENT_TYPE_SET) as readonly TollgateEventType[];

/**
 * One event: `id` is unique deployment-wide, `at` is when the step that wrote it ran (ms),
 * `subject` the account it is about.
 */
export type TollgateEvent = {
  [T in TollgateEventType]: { id: string; type: T; subject: string; at: number; data: EventDataByType[T] };
}[TollgateEventType];

/** An event as a handler gets it: `attempt` is 1 on the first delivery. */
export type DeliveredEvent = TollgateEvent & { attempt: number };

/** events.consume's options. */
export interface ConsumeOptions {
  /** The consumer group: each event is handled once per group (1-64 of A-Z a-z 0-9 _ . -). */
  group: string;
  /** Handles one event; a throw has it delivered again after retryMs. */
  handler: (event: DeliveredEvent) => unknown;
  /** Events taken per subject per call. Default 32. */
  batchSize?: number;
  /** An event not acknowledged this long after its delivery is delivered again. Default 30 s. */
  retryMs?: number;
  /** Deliveries before an event goes to the group's dead letters. Default 10. */
  maxAttempts?: number;
  /** Stops the consumer: consume resolves once it has. */
  signal?: AbortSignal;
}

/** A dead letter: an event whose handler failed maxAttempts times. */
export interface DeadLetter {
  /** The event, as it was delivered (without `attempt`). */
  event: TollgateEvent;
  /** Deliveries it had. */
  attempts: number;
  /** When it was moved to the dead letters (ms). */
  deadAt: number;
}

/** events.stats(): what the outboxes and groups hold. */
export interface EventStats {
  /** Events not written because their subject's outbox was full (maxPerSubject), since the deployment began. */
  dropped: number;
  /** Subjects with events some group has not yet handled. */
  pendingSubjects: number;
  /** The groups, with their dead letters. */
  groups: Array<{ group: string; deadLetters: number }>;
}

const GROUP = /^[A-Za-z0-9_.-]{1,64}$/;

export function groupName(value: unknown): string {
  if (typeof value !== 'string' || !GROUP.test(value)) throw new InvalidInputError(`group must be 1-64 of A-Z a-z 0-9 _ . - (got ${JSON.stringify(value)})`);
  return value;
}

/** Checks a threshold list; `what` names it in the message. */
export function thresholdsArg(what: string, value: unknown): Threshold[] {
  if (!Array.isArray(value)) throw new InvalidInputError(`${what} must be a list of { below } or { usedPercent }`);
  if (value.length > MAX_THRESHOLDS) throw new InvalidInputError(`${what}: at most ${MAX_THRESHOLDS} thresholds`);
  return value.map((raw, i) => {
    const t = (raw ?? {}) as Record<string, unknown>;
    const keys = typeof raw === 'object' && raw !== null ? Object.keys(t) : [];
    if (keys.length === 1 && keys[0] === 'below') return { below: count(`${what}[${i}].below`, t.below, 0, MAX_ALLOWANCE) };
    if (keys.length === 1 && keys[0] === 'usedPercent') return { usedPercent: count(`${what}[${i}].usedPercent`, t.usedPercent, 1, 100) };
    throw new InvalidInputError(`${what}[${i}] must be { below: n } or { usedPercent: p }`);
  });
}

/** A plan's `events`, checked: undefined when the plan has none. */
export function planEventsArg(what: string, value: unknown): PlanEvents | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) throw new InvalidInputError(`${what} must be { thresholds }`);
  const thresholds = (value as { thresholds?: unknown }).thresholds ?? [];
  return Object.freeze({ thresholds: Object.freeze(thresholdsArg(`${what}.thresholds`, thresholds)) as Threshold[] });
}

/** The stored text of a threshold list (lua/lib/events.lua): 'b<n>' and 'u<p>', comma-separated. */
export function thresholdsSpec(thresholds: readonly Threshold[]): string {
  return thresholds.map((t) => ('below' in t ? `b${t.below}` : `u${t.usedPercent}`)).join(',');
}

/** A plan's events as createAccount and changePlan take them: its thresholds, or 'none'. */
export function planEventsSpec(events: PlanEvents | undefined): string {
  return events ? thresholdsSpec(events.thresholds) : 'none';
}

/** The cycle balance at or under which `usedPercent` holds: -1 never (an allowance of 0). */
export function usedLimit(usedPercent: number, allowance: number): number {
  return allowance > 0 ? allowance - Math.ceil((usedPercent * allowance) / 100) : -1;
}

/** createTollgate's `events`, checked, with its defaults. */
export function eventsOptions(value: EventsOptions | undefined): Required<EventsOptions> {
  if (value !== undefined && (typeof value !== 'object' || value === null)) throw new InvalidInputError('events must be { expiringNoticeMs?, maxPerSubject? }');
  return {
    expiringNoticeMs: count('events.expiringNoticeMs', value?.expiringNoticeMs ?? 3 * 86_400_000, 0),
    maxPerSubject: count('events.maxPerSubject', value?.maxPerSubject ?? 1000, 1, 1_000_000),
  };
}

/** events.consume's options, checked, with their defaults. */
export function consumeArgs(options: ConsumeOptions): Required<Omit<ConsumeOptions, 'signal'>> & { signal: AbortSignal | undefined } {
  if (typeof options !== 'object' || options === null) throw new InvalidInputError('consume needs { group, handler }');
  if (typeof options.handler !== 'function') throw new InvalidInputError('handler must be a function');
  return {
    group: groupName(options.group),
    handler: options.handler,
    batchSize: count('batchSize', options.batchSize ?? 32, 1, 1000),
    retryMs: count('retryMs', options.retryMs ?? 30_000, 1),
    maxAttempts: count('maxAttempts', options.maxAttempts ?? 10, 1, 1000),
    signal: options.signal,
  };
}
