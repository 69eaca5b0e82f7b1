/**
 * createTollgate: validates the host's options once and wires the concept modules to one
 * script runner. Everything a server needs hangs off the returned object.
 */
import { Accounts } from './accounts.ts';
import { Keys } from './apiKeys.ts';
import { makeContext } from './context.ts';
import { Credits } from './credits.ts';
import { DenyCache } from './denyCache.ts';
import { EvictionGuard } from './evictionGuard.ts';
import { InvalidInputError } from './errors.ts';
import { Holds } from './holds.ts';
import { leaseArg } from './rules/holds.ts';
import { Idempotency } from './idempotency.ts';
import { Limits } from './limits.ts';
import { createMemoryTollgate } from './memory.ts';
import { plansVersionOf, validatePlans, validatePolicies, type PlanTable, type PolicyTable } from './rules/plans.ts';
import { isScriptClient, type RedisScriptClient } from './redis/client.ts';
import { DurableMovements } from './scripts/durable.ts';
import { ScriptRunner } from './scripts/runner.ts';
import type { Settings } from './scripts/script.ts';
import { Sweeper } from './sweep.ts';
import { instruments, ObservedRunner, type TelemetryOption } from './telemetry.ts';
import { readUsage, type Usage } from './usage.ts';
import { count } from './rules/validate.ts';
import { Events } from './events/events.ts';
import { eventsNotifier } from './events/outbox.ts';
import { eventsOptions, type EventsOptions } from './rules/events.ts';

/** createTollgate's options: `plans`, and `redis` or `memory: true` (exactly one of the two). */
export interface TollgateOptions {
  /** A client adapted with fromNodeRedis or fromIoredis (standalone or cluster). */
  redis?: RedisScriptClient;
  /**
   * true: a tollgate in this process's memory, with the same API and rules, for tests and
   * one-process apps. Several processes share nothing, and nothing survives a restart. The
   * options that mean something on Redis only (prefix, durability, scripts, denyCache,
   * timeoutMs, telemetry, resendIds, acceptEviction) are refused with it. Default clock: Date.now.
   */
  memory?: boolean;
  /**
   * The plans accounts are opened on, by name: each surface's windows, the credits of a
   * cycle and the rules for holds. Validated here.
   */
  plans: PlanTable;
  /**
   * The plan table's version, a whole number to raise with every edit of `plans`. An account
   * takes its plan's new numbers at its next admit when this is higher than the version its
   * numbers came from, so servers with the old and the new table side by side in a rolling
   * deploy never move it back. Without it an account is refreshed whenever the table's numbers
   * differ from the ones it was given: set it (docs/limits.md, "Plan edits").
   */
  plansVersion?: number;
  /** Windows for subjects without an account, by policy name (limits.admit with `policy`). */
  policies?: PolicyTable;
  /** Key prefix; default "tg". */
  prefix?: string;
  /** Injected clock (ms). Default: the Redis server's TIME, so all app servers agree. */
  clock?: () => number;
  /**
   * Credit journal (credits.reconcile): bounded by `maxEntries` entries or `maxAgeMs` of age,
   * or false to keep none. Default 10,000 entries.
   */
  journal?: false | { maxEntries: number } | { maxAgeMs: number };
  /** Credits spent and refunded per day (credits.history): `days` kept, or false. Default 92 days. */
  history?: false | { days: number };
  /** A quota-store call slower than this fails closed with StoreUnavailableError. Default 2000. */
  timeoutMs?: number;
  /** Hold lease, 1 ms to 62 days; every settlement and holds.renew renew it, and a hold may have its own. Default 5 minutes. */
  leaseMs?: number;
  /**
   * How long a charge's operation id is remembered, and the id of a hold no longer kept.
   * Default 24 h. Past 1,000 ids a subject keeps only those of its last 60 s.
   */
  operationTtlMs?: number;
  /**
   * Charges without an operation id get one the library makes up, kept 2 minutes, so a
   * command a client resends after a reconnect (ioredis does by default) applies once however
   * many of the subject's charges were in flight; a StoreUnavailableError carries it for a
   * retry. Default true; false sends none (then turn client resends off).
   */
  resendIds?: boolean;
  /**
   * Ended holds are kept `keepMs` (default 7 days) and at most `max` per subject (default
   * 1,000), whichever comes first; a dropped hold's id still refuses a new opening for
   * operationTtlMs.
   */
  endedHolds?: { keepMs?: number; max?: number };
  /** How long an Idempotency-Key outcome is kept. Default 24 h. */
  idempotencyTtlMs?: number;
  /** How long an Idempotency-Key claim lasts unless renewed (idempotency.renew). Default 5 s. */
  idempotencyLockMs?: number;
  /**
   * Offset each subject's fixed windows by a hash of its id, so that all subjects do not
   * reset in the same second. Default false: windows are clock-aligned.
   */
  stagger?: boolean;
  /**
   * Answer a denied key's (or policy subject's) further requests from this process's memory
   * until the denial runs out, without a Redis call. Default off.
   */
  denyCache?: boolean | { maxEntries?: number };
  /**
   * API keys: the `prefix` keys start with (default "tgk"), and how many a subject may hold:
   * `maxKeys` that never expire (default 20), `maxExpiringKeys` that do (default 10), at most
   * 50 in all (they live in the account hash, which keeps its compact form so).
   */
  keys?: { prefix?: string; maxKeys?: number; maxExpiringKeys?: number };
  /**
   * OpenTelemetry: a span per quota-store call and counters of admits, denials, charges and
   * store failures. Default true: `@opentelemetry/api`'s global tracer and
   * meter when the package is installed (a no-op until an SDK is registered: register it
   * before createTollgate). false: off, at no cost. Or `{ tracer, meter }` to use.
   *
   * Spans are named `tollgate <script>` (CLIENT kind) with `tollgate.script` and
   * `tollgate.outcome`, under the instrumentation scope `tollgate`; the counters are
   * `tollgate.admits`, `tollgate.denials`, `tollgate.charges` and `tollgate.store.failures`.
   *
   * @example
   * ```ts
   * import { NodeSDK } from "@opentelemetry/sdk-node";
   * new NodeSDK({ serviceName: "api" }).start(); // first: tollgate takes the global tracer and meter
   * const tollgate = createTollgate({ redis: fromNodeRedis(client), plans }); // telemetry on
   * const quiet = createTollgate({ redis: fromNodeRedis(client), plans, telemetry: false }); // off
   * ```
   */
  telemetry?: TelemetryOption;
  /**
   * Acknowledge a credit movement (a charge, a hold opened, settled, spent, finished or
   * cancelled, the sweep's ends) only once WAIT confirms `replicas` replicas have it, so a
   * replica promoted after the primary is lost holds every movement callers were told of.
   * Movements run on `connections` connections of tollgate's own (default 4), copies of the
   * client; admits and reads never wait. One not confirmed within `timeoutMs` (default 500)
   * throws UnconfirmedError with the operation id it used: retry with it, it applies once
   * (charges without an operation id get one of the library's). Default off.
   */
  durability?: false | { replicas: number; timeoutMs?: number; connections?: number };
  /**
   * Run credit movements and create accounts on a Redis that may evict tollgate's keys. By
   * default (false) they are refused with EvictionPolicyError unless every master's
   * maxmemory-policy is `noeviction`, read once (and again after a reconnect); admits run
   * either way. true: do not read it, and accept that an evicted account, hold or operation
   * id loses credits or charges a retry twice.
   */
  acceptEviction?: boolean;
  /**
   * "functions" (default): scripts run as the functions of a library per version,
   * `tollgate_<id>`, loaded where missing; EVALSHA where functions are refused. "eval":
   * EVALSHA only. Older versions' libraries stay loaded: FUNCTION DELETE removes one.
   */
  scripts?: 'functions' | 'eval';
  /**
   * Events (docs/events.md), for accounts whose plan names `events` or that have thresholds
   * of their own: `maxPerSubject` events an outbox keeps until every consumer group has
   * handled them (default 1,000; more are dropped and counted), and `expiringNoticeMs`, how
   * long before a grant expires its grant.expiring comes (default 3 days).
   */
  events?: EventsOptions;
}

/** What createTollgate returns: one object per concept, all on one Redis and one plan table. */
export interface Tollgate {
  /** Accounts and billing cycles. */
  accounts: Accounts;
  /** Request limits: admit, peek, reset. */
  limits: Limits;
  /** Charges, reconciliation, history. */
  credits: Credits;
  /** Credits reserved upfront for bulk jobs and budgets. */
  holds: Holds;
  /** API keys, checked with the admit in one round trip. */
  keys: Keys;
  /** Idempotency-Key support for opening holds. */
  idempotency: Idempotency;
  /** Events: consume them at least once per group, dead letters, counts. */
  events: Events;
  /** The account's whole quota state on a surface, read without counting a request. */
  usage(subject: string, options?: { surface?: string }): Promise<Usage>;
  /** The validated plan table. */
  readonly plans: PlanTable;
  /** The validated policy table. */
  readonly policies: PolicyTable;
  /** Closes the connections tollgate opened itself (durability's); the client you passed stays open. */
  close(): Promise<void>;
  /** @internal Counts a request a middleware decided without the store (the `tollgate.degraded` counter). */
  countDegraded?(mode: 'open' | 'local', surface: string, outcome: 'passed' | 'denied'): void;
}

const HOUR_MS = 3_600_000;

/**
 * Makes a tollgate: checks the options (plans, policies, bounds) once, throwing
 * InvalidInputError or UnknownPlanError before Redis is touched, and wires every concept to
 * one script runner on the given client (or, with `memory: true`, to this process's memory). A raw node-redis or ioredis client is refused with
 * an InvalidInputError that names fromNodeRedis / fromIoredis.
 *
 * @example
 * ```ts
 * import { createClient } from "redis";
 * import { createTollgate, fromNodeRedis } from "tollgate";
 *
 * const client = await createClient({ url: process.env.REDIS_URL }).on("error", (error) => console.error(error)).connect();
 * const tollgate = createTollgate({
 *   redis: fromNodeRedis(client), // or fromIoredis(new Redis(url)); a Cluster client works the same
 *   plans: { basic: { limits: { api: [{ limit: 60, windowMs: 60_000 }] }, credits: { allowance: 500, cycle: { months: 1 } }, holds: { cap: 1, maxItems: 100, surfaces: ["api"] } } },
 *   policies: { signin: { web: [{ limit: 10, windowMs: 60_000 }] } },
 * });
 * // The same API in this process's memory, for tests and one-process apps:
 * const inMemory = createTollgate({ memory: true, plans: tollgate.plans, clock: () => testClock.now });
 * ```
 */
export function createTollgate(options: TollgateOptions): Tollgate {
  if (options?.memory !== undefined && options.memory !== false) return memoryTollgate(options);
  if (!options || !isScriptClient(options.redis)) {
    const given = options?.redis as { evalsha?: unknown; evalSha?: unknown } | undefined;
    const raw =
      given &&
      (typeof given.evalSha === 'function'
        ? 'a raw node-redis client: wrap it with fromNodeRedis(client)'
        : typeof given.evalsha === 'function'
          ? 'a raw ioredis client: wrap it with fromIoredis(client)'
          : undefined);
    throw new InvalidInputError(`createTollgate needs redis: fromNodeRedis(client) or fromIoredis(client), or memory: true${raw ? ` (got ${raw})` : ''}`);
  }
  const prefix = options.prefix ?? 'tg';
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(prefix)) throw new InvalidInputError('prefix must be 1-64 of A-Z a-z 0-9 _ . : -');
  const keyPrefix = options.keys?.prefix ?? 'tgk';
  if (!/^[A-Za-z0-9]{1,16}$/.test(keyPrefix)) throw new InvalidInputError('keys.prefix must be 1-16 of A-Z a-z 0-9');
  const plans = validatePlans(options.plans);
  const policies = validatePolicies(options.policies);
  const leaseMs = leaseArg('leaseMs', options.leaseMs ?? 5 * 60_000);
  const historyDays = options.history === false ? 0 : count('history.days', options.history?.days ?? 92, 1, 3660);
  const settings: Settings = {
    ...journalSettings(options.journal),
    historyDays: String(historyDays),
    leaseMs: String(leaseMs),
    idempotencyTtlMs: String(count('idempotencyTtlMs', options.idempotencyTtlMs ?? 24 * HOUR_MS, 1)),
    idempotencyLockMs: String(count('idempotencyLockMs', options.idempotencyLockMs ?? 5_000, 1)),
    operationTtlMs: String(count('operationTtlMs', options.operationTtlMs ?? 24 * HOUR_MS, 1)),
    endedHoldsKeepMs: String(count('endedHolds.keepMs', options.endedHolds?.keepMs ?? 7 * 24 * HOUR_MS, 1)),
    endedHoldsMax: String(count('endedHolds.max', options.endedHolds?.max ?? 1000, 1, 100_000)),
    plansVersion: plansVersionOf(options.plansVersion, plans),
    eventsMax: String(eventsOptions(options.events).maxPerSubject),
  };
  // Keys live in the account hash: at most 50 of them in all, so it keeps its compact form.
  const maxKeys = count('keys.maxKeys', options.keys?.maxKeys ?? 20, 1, 49);
  const maxExpiringKeys = count('keys.maxExpiringKeys', options.keys?.maxExpiringKeys ?? 10, 1, 50 - maxKeys);
  const clock = options.clock;
  const localNow = clock ? () => Math.floor(clock()) : () => Date.now();
  const deny = options.denyCache;
  const timeoutMs = count('timeoutMs', options.timeoutMs ?? 2000, 1);
  const scripts = options.scripts ?? 'functions';
  if (scripts !== 'functions' && scripts !== 'eval') throw new InvalidInputError('scripts must be "functions" or "eval"');
  const redis = options.redis;
  const runnerArgs = [redis, timeoutMs, settings, clock, durableMovements(redis, options.durability, timeoutMs), scripts] as const;
  const observe = instruments(options.telemetry);
  if (options.acceptEviction !== undefined && typeof options.acceptEviction !== 'boolean') throw new InvalidInputError('acceptEviction must be true or false');
  const ctx = makeContext({
    runner: observe ? new ObservedRunner(observe, ...runnerArgs) : new ScriptRunner(...runnerArgs),
    prefix,
    plans,
    policies,
    leaseMs,
    stagger: options.stagger === true,
    resendIds: options.resendIds !== false,
    denyCache: deny ? new DenyCache(count('denyCache.maxEntries', (deny === true ? undefined : deny.maxEntries) ?? 10_000, 1), localNow) : undefined,
    eviction: new EvictionGuard(options.redis, options.acceptEviction !== true, timeoutMs, localNow),
    keyPrefix,
    maxKeys,
    maxExpiringKeys,
    historyDays,
    clock,
  });
  ctx.runner.onEvents = eventsNotifier(ctx, observe?.eventsDropped && ((n) => observe.eventsDropped!.add(n)));
  return {
    accounts: new Accounts(ctx),
    events: new Events(ctx),
    limits: new Limits(ctx),
    credits: new Credits(ctx),
    holds: new Holds(ctx, new Sweeper(ctx)),
    keys: new Keys(ctx),
    idempotency: new Idempotency(ctx),
    usage: (subject, usageOptions) => readUsage(ctx, subject, usageOptions),
    plans,
    policies,
    close: () => ctx.runner.close(),
    ...(observe?.degraded && {
      countDegraded: (mode, surface, outcome) => observe.degraded!.add(1, { 'tollgate.mode': mode, 'tollgate.surface': surface, 'tollgate.outcome': outcome }),
    }),
  };
}

/** Options that mean something on Redis only: refused with `memory`. */
const REDIS_ONLY = ['prefix', 'durability', 'scripts', 'denyCache', 'timeoutMs', 'telemetry', 'resendIds', 'acceptEviction'] as const;

function memoryTollgate(options: TollgateOptions): Tollgate {
  if (options.memory !== true) throw new InvalidInputError(`memory must be true, or left out for a tollgate on Redis (got ${JSON.stringify(options.memory)})`);
  if (options.redis !== undefined) throw new InvalidInputError('Give redis or memory: true, not both');
  for (const name of REDIS_ONLY) {
    if (options[name] !== undefined) throw new InvalidInputError(`${name} means something on Redis only: a tollgate with memory: true takes none`);
  }
  return createMemoryTollgate(options);
}

function durableMovements(redis: RedisScriptClient, durability: TollgateOptions['durability'], timeoutMs: number): DurableMovements | undefined {
  if (durability === undefined || durability === false) return undefined;
  if (typeof durability !== 'object' || durability === null) throw new InvalidInputError('durability must be false or { replicas, timeoutMs?, connections? }');
  if (typeof redis.dedicated !== 'function') {
    throw new InvalidInputError(
      "durability needs a client tollgate can open connections of its own from: a node-redis or ioredis client or cluster (duplicate, or a cluster's slots and node clients), wrapped with fromNodeRedis or fromIoredis",
    );
  }
  const waitMs = count('durability.timeoutMs', durability.timeoutMs ?? 500, 1);
  return new DurableMovements(redis, {
    replicas: count('durability.replicas', durability.replicas, 1, 1000),
    waitMs,
    connections: count('durability.connections', durability.connections ?? 4, 1, 64),
    deadlineMs: timeoutMs + waitMs,
  });
}

function journalSettings(journal: TollgateOptions['journal']): Pick<Settings, 'journalTrim' | 'journalBound'> {
  if (journal === false) return { journalTrim: 'off', journalBound: '0' };
  if (journal === undefined) return { journalTrim: 'maxlen', journalBound: '10000' };
  if ('maxAgeMs' in journal) return { journalTrim: 'minage', journalBound: String(count('journal.maxAgeMs', journal.maxAgeMs, 1)) };
  return { journalTrim: 'maxlen', journalBound: String(count('journal.maxEntries', journal.maxEntries, 1)) };
}
