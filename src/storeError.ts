/**
 * What the rate-limit middlewares do when the quota store cannot be reached (their
 * `onStoreError`, docs/reliability.md "When Redis is down"):
 * - "closed" (the default): 503 unavailable;
 * - "open": the request passes, uncounted;
 * - "local": the memory tollgate of this process counts it, on the plan whose windows the store
 *   last answered for the subject (one not seen yet: the most restrictive plan with the
 *   surface), or by its policy, each window's limit divided by `instances`.
 * The store is asked first on every request, so the middleware is back on it as soon as it
 * answers. Neither open nor local can verify a key: the pass carries the subject the key
 * names, unverified, and `degraded`. A request that pre-checks credits always fails closed.
 */
import { InvalidInputError, isTollgateError } from './errors.ts';
import { rateLimitedReply, rateLimitHeaders, unavailableReply } from './replies.ts';
import type { Admission } from './rules/limits.ts';
import { refused, type RateLimitDecision, type RateLimitOptions, type StoreErrorMode } from './rateLimitOptions.ts';
import { createLocalLimiter } from './memory.ts';
import type { Plan } from './rules/plans.ts';
import type { Tollgate } from './tollgate.ts';
import { count } from './rules/validate.ts';
import { checkedWindows, type RateLimitState, type Window } from './rules/windows.ts';

/** The request that met the store failure, as checkRequest read it. */
export interface FailedCall {
  /** The API key, or the subject the host named. */
  given: string;
  surface: string;
  cost: number;
  credits: number;
  requestId: () => string;
}

/** Subjects each local limiter remembers the windows and plan of, at most. */
const MAX_ENTRIES = 10_000;

const limiters = new WeakMap<object, LocalLimiter>();

/** Checks `onStoreError` and `instances`; with "local", makes the middleware's limiter. */
export function storeErrorMode(options: RateLimitOptions<never>): StoreErrorMode {
  const mode = options.onStoreError ?? 'closed';
  if (mode !== 'closed' && mode !== 'open' && mode !== 'local')
    throw new InvalidInputError(`rateLimit: onStoreError ${JSON.stringify(mode)} is not "closed", "open" or "local"`);
  if (options.instances !== undefined && mode !== 'local')
    throw new InvalidInputError('rateLimit: instances divides the limits of onStoreError "local"; it means nothing without it');
  if (mode === 'local' && !limiters.has(options))
    limiters.set(options, new LocalLimiter(options.tollgate, count('rateLimit: instances', options.instances ?? 1, 1, 10_000)));
  return mode;
}

/** With onStoreError "local", remembers the windows the store answered for the subject. */
export function rememberWindows(options: RateLimitOptions<never>, subject: string, surface: string, windows: readonly RateLimitState[]): void {
  limiterOf(options).remember(subject, surface, windows);
}

/** The decision for a request the store could not answer. */
export async function whenStoreFails<Req>(options: RateLimitOptions<Req>, call: FailedCall, error: unknown): Promise<RateLimitDecision> {
  const mode = options.onStoreError ?? 'closed';
  // Credits cannot be looked for anywhere but the store.
  if (mode === 'closed' || call.credits > 0) return refused('unavailable', unavailableReply(call.requestId()), { error });
  const { tollgate, policy } = options;
  const parsed = options.key ? tollgate.keys.parse(call.given) : { subject: call.given };
  // A malformed key never reaches the store: keys.verify refuses it first.
  if (parsed === null) return refused('unavailable', unavailableReply(call.requestId()), { error });
  const { subject } = parsed;
  const { surface } = call;
  const keyId = 'keyId' in parsed ? { keyId: parsed.keyId } : {};
  if (mode === 'open') {
    tollgate.countDegraded?.('open', surface, 'passed');
    return { ok: true, pass: { subject, ...keyId, surface, headers: {}, degraded: 'open' } };
  }
  const admission = await limiterOf(options).admit(subject, surface, call.cost, policy);
  if (admission === undefined) return refused('unavailable', unavailableReply(call.requestId()), { error });
  tollgate.countDegraded?.('local', surface, admission.ok ? 'passed' : 'denied');
  const headerOptions = { ietf: options.ietfHeaders === true, policy: policy ?? surface };
  if (!admission.ok) return refused('rate_limited', rateLimitedReply(admission, call.requestId(), headerOptions), { subject, admission });
  return { ok: true, pass: { subject, ...keyId, surface, admission, headers: rateLimitHeaders(admission, headerOptions), degraded: 'local' } };
}

/** The middleware's limiter, made on first use when checkRequest's options were never checked. */
function limiterOf(options: RateLimitOptions<never>): LocalLimiter {
  if (!limiters.has(options)) storeErrorMode(options);
  return limiters.get(options)!;
}

/**
 * The memory tollgate's limits (createLocalLimiter: the same plans and policies, each limit
 * divided by the instances), with each subject put on the plan whose windows the store last
 * answered for it.
 */
class LocalLimiter {
  private readonly seen = new Map<string, readonly Window[]>();
  /** The plan each subject holds in the limiter's memory. */
  private readonly placed = new Map<string, string>();
  private readonly memory: ReturnType<typeof createLocalLimiter>;

  constructor(
    private readonly tollgate: Tollgate,
    instances: number,
  ) {
    const { plans, policies } = tollgate;
    this.memory = createLocalLimiter({ plans, ...(Object.keys(policies).length > 0 && { policies }), instances, journal: false, history: false });
  }

  remember(subject: string, surface: string, windows: readonly RateLimitState[]): void {
    // The latest answer wins: a plan change reaches the local limits too.
    const id = `${subject}\0${surface}`;
    this.seen.delete(id);
    bounded(this.seen).set(
      id,
      windows.map(({ limit, windowMs }) => ({ limit, windowMs })),
    );
  }

  /** The admission of this process's counters; undefined when no plan has the surface. */
  async admit(subject: string, surface: string, cost: number, policy: string | undefined): Promise<Admission | undefined> {
    if (policy !== undefined) return this.memory.limits.admit(subject, { policy, surface, cost });
    const plan = this.planOf(subject, surface);
    if (plan === undefined) return undefined;
    if (this.placed.get(subject) !== plan) {
      // A subject new here, or one whose plan changed (or that this map let go of).
      await this.memory.accounts.create(subject, { plan }).catch((error: unknown) => {
        if (!isTollgateError(error, 'account_exists')) throw error;
        return this.memory.accounts.changePlan(subject, plan);
      });
      this.placed.delete(subject);
      bounded(this.placed).set(subject, plan);
    }
    return this.memory.limits.admit(subject, { surface, cost });
  }

  /** The plan whose windows the store last answered for the subject; else the most restrictive on the surface. */
  private planOf(subject: string, surface: string): string | undefined {
    const plans = Object.entries(this.tollgate.plans).filter(([, plan]) => plan.limits[surface] !== undefined);
    const seen = this.seen.get(`${subject}\0${surface}`);
    const same = (windows: readonly Window[]) =>
      seen !== undefined && windows.length === seen.length && windows.every((w, i) => w.limit === seen[i]!.limit && w.windowMs === seen[i]!.windowMs);
    const match = plans.find(([, plan]) => same(checkedWindows(plan.limits[surface]!)));
    if (match) return match[0];
    const perMs = (windows: readonly Window[]) => Math.min(...windows.map((w) => w.limit / w.windowMs));
    return plans.reduce<[string, Plan] | undefined>(
      (least, entry) =>
        least === undefined || perMs(checkedWindows(entry[1].limits[surface]!)) < perMs(checkedWindows(least[1].limits[surface]!)) ? entry : least,
      undefined,
    )?.[0];
  }
}

/** The map with room for one more entry: past MAX_ENTRIES the oldest goes. */
function bounded<V>(map: Map<string, V>): Map<string, V> {
  if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value!);
  return map;
}
