/**
 * What every concept of the reference model shares: the validated tables and bounds, the
 * clock, and the stored state (accounts by subject, window counters, the sweep index). Each
 * concept (accounts.ts, limits.ts, credits.ts, holds.ts, keys.ts, idempotency.ts, usage.ts)
 * holds one of these, as the library's concept modules hold one context.
 */
import { AccountNotFoundError, InvalidInputError } from '../errors.ts';
import { accountSurfaceCheck, validatePlans, validatePolicies, type PlanTable, type PolicyTable } from '../rules/plans.ts';
import type { AccountLimits, EndedCycle, Hold } from '../rules/records.ts';
import { leaseArg } from '../rules/holds.ts';
import { count, subjectId } from '../rules/validate.ts';
import { staggerOf, type Window } from '../rules/windows.ts';
import { ExpiringMap } from './expiring.ts';
import type { Slot, WindowCounters } from './windows.ts';
import { eventsOptions, type EventDataByType, type EventsOptions, type Threshold, type TollgateEventType } from '../rules/events.ts';

/** The model's options: createTollgate's that change the rules, and a clock it must be given. */
export interface ModelOptions {
  /** Plan table, as createTollgate's (required). */
  plans: PlanTable;
  /** Policy table, as createTollgate. */
  policies?: PolicyTable;
  /** Time in ms: the model never reads the system clock. */
  clock: () => number;
  /** Hold lease, 1 ms to 62 days; default 5 minutes, as createTollgate. */
  leaseMs?: number;
  /** Offset fixed windows per subject, as createTollgate's `stagger`. */
  stagger?: boolean;
  /** Days of history kept; false keeps none. Default 92, as createTollgate. */
  history?: false | { days: number };
  /** The credit journal (credits.reconcile): false keeps none. Default on, as createTollgate. */
  journal?: false | { maxEntries: number } | { maxAgeMs: number };
  /** How long an Idempotency-Key outcome is kept. Default 24 h, as createTollgate. */
  idempotencyTtlMs?: number;
  /** How long an Idempotency-Key claim lasts unless renewed. Default 5 s, as createTollgate. */
  idempotencyLockMs?: number;
  /** How long a charge's operation id is remembered. Default 24 h, as createTollgate. */
  operationTtlMs?: number;
  /** API keys: prefix and bounds, as createTollgate's `keys`. */
  keys?: { prefix?: string; maxKeys?: number; maxExpiringKeys?: number };
  /** Ended holds kept: keepMs (default 7 days) and at most max per subject (default 1,000), as createTollgate. */
  endedHolds?: { keepMs?: number; max?: number };
  /** Events: maxPerSubject and expiringNoticeMs, as createTollgate's `events`. */
  events?: EventsOptions;
}

/** An API key as the model holds it (never the key itself: its digest). */
export interface ModelKey {
  /** The key's id. */
  keyId: string;
  /** The digest of the whole key (the key itself is never kept). */
  digest: string;
  /** The label given at issue. */
  name: string;
  /** When it was issued (ms). */
  createdAt: number;
  /** 0: never. */
  expiresAt: number;
  /** null: every surface. */
  surfaces: string[] | null;
  /** The key's own windows per surface (keys.issue `limits`), and their counts. */
  limits?: { windows: Record<string, Window[]>; slots: Map<string, Slot[]> };
}

/** An Idempotency-Key record: pending under a claim's token until `expiresAt`, or done. */
export interface ModelIdempotencyRecord {
  /** The fingerprint of the request body the key was first used with. */
  fingerprint: string;
  /** The claim's token while pending. */
  token: string;
  /** Until when a pending claim holds (by the model's clock); a done record is kept idempotencyTtlMs. */
  claimedUntil: number;
  /** The stored outcome; null while the key is claimed. */
  outcome: { kind: 'hold'; hold: Hold } | { kind: 'hold_limit_reached'; active: number; cap: number } | null;
}

/** One account as the model holds it. */
export interface ModelAccount {
  /** The plan's numbers as the account holds them. */
  plan: AccountLimits;
  /** Credits the current cycle started with. */
  allowance: number;
  /** The allowance from the next cycle on. */
  nextAllowance: number;
  /** Credits left in the current cycle. */
  balance: number;
  /** Credits spent in the current cycle. */
  spent: number;
  /** Credits held by open holds of the current cycle. */
  held: number;
  /** The current cycle's id. */
  cycle: number;
  /** The current cycle's first instant (ms). */
  cycleStart: number;
  /** The first instant after the current cycle (ms). */
  cycleEnd: number;
  /** The instant cycles are counted from (ms). */
  anchor: number;
  /** Cycles in days (`d`) or calendar months (`m`). */
  unit: 'd' | 'm';
  /** Days or months per cycle. */
  length: number;
  /** Ended cycles by id. */
  ended: Map<number, EndedCycle>;
  /** Holds by id. */
  holds: Map<string, ModelHold>;
  /** Charged operation ids: what was charged and the terms asked ('<required>:<optional>'), kept operationTtlMs. */
  operations: ExpiringMap<{ charged: number; terms: string }>;
  /** Ids of ended holds no longer kept, kept operationTtlMs: an opening with one is refused. */
  droppedHolds: ExpiringMap<true>;
  /** '<day><s|r>' -> credits: spent and refunded per UTC day. */
  history: Map<string, number>;
  /** The credit journal of the cycle whose opening grant is journaled (0: none yet): entries and their sums. */
  journal: { cycle: number; entries: number; balance: number; spent: number; held: number };
  /** API keys by id. */
  keys: Map<string, ModelKey>;
  /** Window counts by surface: one slot per window length counted. */
  windows: Map<string, Slot[]>;
  /** The surface last admitted on, with its windows and counts (a cache a plan change clears). */
  hot: { surface: string; windows: readonly Window[]; slots: Slot[] } | undefined;
  /** Its thresholds and their state, only on an account with events (model/events.ts). */
  events?: ModelEvents;
}

/** A hold as the model holds it: the public Hold and the items settled. */
export interface ModelHold extends Hold {
  /** Ids of the items settled (or budget draws), so a repeat is a replay. */
  items_: Set<string>;
  /** The hold's own lease length; 0: the model's leaseMs. */
  leaseMs_: number;
}

/** An account's events: its thresholds, which conditions held at the last check, and where events go. */
export interface ModelEvents {
  /** Whether the thresholds are the account's own (setThresholds) rather than its plan's. */
  own: boolean;
  thresholds: Threshold[];
  /** Bitmask of the conditions that held at the last check: 1 depleted, 2^i the i-th threshold. */
  fired: number;
  /** Events its outbox had no room for. */
  dropped: number;
  /** Writes one event to the subject's outbox (ModelOutboxes.emit). */
  emit: (type: TollgateEventType, data: EventDataByType[TollgateEventType]) => void;
}

/** One event as an outbox keeps it. */
export interface ModelOutboxEntry {
  /** The outbox entry's sequence: its id is `<subject>/<seq>-0`. */
  seq: number;
  id: string;
  type: TollgateEventType;
  at: number;
  data: unknown;
  /** A replayed dead letter's group: only it gets the entry. */
  group?: string;
  /** Per group: deliveries, and when the last began (a group that has not seen it: absent). */
  deliveries: Map<string, { count: number; at: number; acked: boolean }>;
}

/** A subject's outbox. */
export interface ModelOutbox {
  entries: ModelOutboxEntry[];
  /** The last entry's sequence (never reused). */
  seq: number;
}

/** One override: its windows and its end (0: none). */
export interface ModelOverride {
  /** The windows in force while it lasts. */
  windows: readonly Window[];
  /** When it ends (ms); 0: no end. */
  expiresAt: number;
}

/** Overrides by `<subject>\0<policy, '' for the account>\0<surface>`. */
export type ModelOverrideMap = Map<string, ModelOverride>;

const HOUR_MS = 3_600_000;

/** The validated options, the clock and the state the concepts share. */
export class ModelCore {
  readonly plans: PlanTable;
  readonly policies: PolicyTable;
  readonly leaseMs: number;
  readonly stagger: boolean;
  readonly historyDays: number;
  readonly journal: boolean;
  readonly idempotencyTtlMs: number;
  readonly idempotencyLockMs: number;
  readonly operationTtlMs: number;
  readonly keyPrefix: string;
  readonly maxKeys: number;
  readonly maxExpiringKeys: number;
  readonly endedKeepMs: number;
  readonly endedMax: number;
  /** Validates a surface an account is counted on against every plan of the table. */
  readonly accountSurface: (surface: unknown) => string;
  /** Every account by subject. */
  readonly state = new Map<string, ModelAccount>();
  /** Policy subjects' window counts, dropped once no read can reach them (accounts keep their own). */
  readonly counters: WindowCounters = new ExpiringMap();
  /** Subjects' own windows on a surface (limits.override), empty unless one is set. */
  readonly overrides: ModelOverrideMap = new Map();
  /** Idempotency-Key records by `<subject>\0<key>`. */
  readonly idempotency = new ExpiringMap<ModelIdempotencyRecord>();
  /** Subjects by when a hold lease of theirs may run out (the sweep's index). */
  readonly sweepIndex = new Map<string, number>();
  /** Each subject's outbox of events (model/events.ts). */
  readonly outboxes = new Map<string, ModelOutbox>();
  /** The joined consumer groups, with their dead letters by event id. */
  readonly eventGroups = new Map<string, Map<string, unknown>>();
  /** Events one outbox keeps at most; more are dropped and counted in eventsDropped. */
  readonly eventsMax: number;
  readonly expiringNoticeMs: number;
  eventsDropped = 0;
  private readonly clock: () => number;

  constructor(options: ModelOptions) {
    this.plans = validatePlans(options.plans);
    this.policies = validatePolicies(options.policies);
    this.clock = options.clock;
    this.leaseMs = leaseArg('leaseMs', options.leaseMs ?? 5 * 60_000);
    this.stagger = options.stagger === true;
    this.historyDays = options.history === false ? 0 : count('history.days', options.history?.days ?? 92, 1, 3660);
    this.journal = journalOn(options.journal);
    this.idempotencyTtlMs = count('idempotencyTtlMs', options.idempotencyTtlMs ?? 24 * HOUR_MS, 1);
    this.idempotencyLockMs = count('idempotencyLockMs', options.idempotencyLockMs ?? 5_000, 1);
    this.operationTtlMs = count('operationTtlMs', options.operationTtlMs ?? 24 * HOUR_MS, 1);
    const keyPrefix = options.keys?.prefix ?? 'tgk';
    if (!/^[A-Za-z0-9]{1,16}$/.test(keyPrefix)) throw new InvalidInputError('keys.prefix must be 1-16 of A-Z a-z 0-9');
    this.keyPrefix = keyPrefix;
    // As on Redis: at most 50 keys in all.
    this.maxKeys = count('keys.maxKeys', options.keys?.maxKeys ?? 20, 1, 49);
    this.maxExpiringKeys = count('keys.maxExpiringKeys', options.keys?.maxExpiringKeys ?? 10, 1, 50 - this.maxKeys);
    this.endedKeepMs = count('endedHolds.keepMs', options.endedHolds?.keepMs ?? 7 * 24 * HOUR_MS, 1);
    this.endedMax = count('endedHolds.max', options.endedHolds?.max ?? 1000, 1, 100_000);
    this.accountSurface = accountSurfaceCheck(this.plans);
    const events = eventsOptions(options.events);
    this.eventsMax = events.maxPerSubject;
    this.expiringNoticeMs = events.expiringNoticeMs;
  }

  /** Where the subject's events go: its outbox, or the dropped count when the outbox is full. */
  emitter(subject: string): ModelEvents['emit'] {
    return (type: TollgateEventType, data: unknown) => {
      const outbox = this.outboxes.get(subject) ?? { entries: [], seq: 0 };
      this.outboxes.set(subject, outbox);
      const a = this.state.get(subject);
      if (outbox.entries.length >= this.eventsMax) {
        this.eventsDropped += 1;
        if (a?.events) a.events.dropped += 1;
        return;
      }
      outbox.seq += 1;
      outbox.entries.push({ seq: outbox.seq, id: `${subject}/${outbox.seq}-0`, type, at: this.now(), data, deliveries: new Map() });
    };
  }

  /** The clock's time, in whole ms. */
  now(): number {
    return this.clock === Date.now ? Date.now() : Math.floor(this.clock());
  }

  /** The subject's offset of fixed windows: 0 without stagger. */
  staggerOf(subject: string): number {
    return this.stagger ? staggerOf(subject) : 0;
  }

  /** The subject's account; AccountNotFoundError without one. */
  account(subject: unknown): ModelAccount {
    const id = subjectId(subject);
    const a = this.state.get(id);
    if (!a) throw new AccountNotFoundError(id);
    return a;
  }
}

function journalOn(journal: ModelOptions['journal']): boolean {
  if (journal === false) return false;
  if (journal === undefined) return true;
  if ('maxAgeMs' in journal) count('journal.maxAgeMs', journal.maxAgeMs, 1);
  else count('journal.maxEntries', journal.maxEntries, 1);
  return true;
}
