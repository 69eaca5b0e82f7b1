/**
 * Request limits in the reference model (docs/limits.md): a subject with an account is
 * counted in its plan's windows of a surface, one without an account in a policy's; all
 * windows or none, and a denial counts nothing.
 */
import { AccountNotFoundError } from '../errors.ts';
import {
  admitArgs,
  admitted,
  denied,
  leaseOf,
  leaseText,
  policyWindows,
  type Admission,
  type AdmitOptions,
  type Allowed,
  type LimitState,
  type LimitTarget,
} from '../rules/limits.ts';
import { subjectId } from '../rules/validate.ts';
import { mostRestrictive, shadowDenialsOf, surfaceName, type RateLimitState, type Window } from '../rules/windows.ts';
import type { ModelAccount, ModelCore } from './core.ts';
import { availableAt } from './grants.ts';
import type { Override, OverrideOptions } from '../overrides.ts';
import { listOverrides, setOverride, windowsInForce } from './overrides.ts';
import { admitOne, countWindows, releasePlace, limitState, resetWindows, slotsDeadAt, surfaceWindows, type Counted, type Slot } from './windows.ts';

const NO_OPTIONS: AdmitOptions = {};

/** A key's own windows on a surface and their counts. */
export interface KeyWindows {
  /** The key's windows on the surface. */
  windows: readonly Window[];
  /** Their counts. */
  slots: Slot[];
}

/** As tollgate.limits: admit, peek, reset. */
export class ModelLimits {
  /** @internal Made by TollgateModel. */
  constructor(private readonly core: ModelCore) {}

  /** Counts a request of `cost` in every window of the surface, with the credit pre-check; a denial counts nothing. */
  admit(subject: string, options: AdmitOptions = NO_OPTIONS): Admission {
    // An account's id was checked when it was made: a subject that has one needs no check again.
    const a = typeof subject === 'string' ? this.core.state.get(subject) : undefined;
    const id = a === undefined ? subjectId(subject) : subject;
    if (options === NO_OPTIONS || (options.cost === undefined && options.credits === undefined && options.policy === undefined)) {
      const surface = options.surface ?? 'api';
      // The surface the account was last admitted on was checked then.
      return this.admitAccount(id, a?.hot?.surface === surface ? surface : this.core.accountSurface(surface), 1, 0, a);
    }
    const { cost, credits } = admitArgs(options);
    if (options.policy === undefined) return this.admitAccount(id, this.core.accountSurface(options.surface ?? 'api'), cost, credits, a);
    return this.admitPolicy(id, options.policy, options.surface, cost);
  }

  private admitPolicy(subject: string, policy: string, surfaceArg: string | undefined, cost: number): Admission {
    const surface = surfaceName('Surface', surfaceArg ?? 'api');
    const now = this.core.now();
    const windows = windowsInForce(this.core, subject, policy, surface, policyWindows(this.core.policies, policy, surface), now);
    const key = `${subject}\0${policy}\0${surface}`;
    const slots = this.core.counters.get(key, now) ?? [];
    const counted = countWindows(slots, windows, now, this.core.staggerOf(subject), cost);
    if (counted.outcome === 'ok') this.core.counters.set(key, slots, slotsDeadAt(slots), now);
    return admission(counted, undefined, `${surface}:${policy}`);
  }

  /**
   * Counts a request of `cost` in the account's windows of a (checked) surface, with the credit
   * pre-check when `credits` > 0; keys.verify admits so too.
   */
  admitAccount(subject: string, surface: string, cost: number, credits: number, account?: ModelAccount, key?: KeyWindows): Admission {
    const a = account ?? this.core.state.get(subject);
    if (a === undefined) throw new AccountNotFoundError(subject);
    let hot = a.hot;
    if (hot === undefined || hot.surface !== surface) {
      hot = { surface, windows: surfaceWindows(a.plan.limits, subject, surface), slots: slotsOf(a, surface) };
      a.hot = hot;
    }
    const { slots } = hot;
    const now = this.core.now();
    const windows = windowsInForce(this.core, subject, undefined, surface, hot.windows, now);
    if (key !== undefined) return this.withKey(a, slots, windows, key, now, subject, cost, credits);
    // The common case, one window admitted: the same rule with the fewest objects.
    const state = windows.length === 1 ? admitOne(slots, windows[0]!, now, this.core.staggerOf(subject), cost) : undefined;
    if (state !== undefined && credits === 0) return admitted(state, [state]);
    return this.counted(a, slots, windows, now, subject, cost, credits, state);
  }

  /**
   * The account's windows and a key's own, counted in both or in neither (docs/limits.md,
   * "Per-key limits"): the admission lists the account's windows, then the key's.
   */
  private withKey(
    a: ModelAccount,
    slots: Slot[],
    windows: readonly Window[],
    key: KeyWindows,
    now: number,
    subject: string,
    cost: number,
    credits: number,
  ): Admission {
    const stagger = this.core.staggerOf(subject);
    const tryAccount = countWindows(structuredClone(slots), windows, now, stagger, cost);
    const tryKey = countWindows(structuredClone(key.slots), key.windows, now, 0, cost);
    const outcome = tryAccount.outcome !== 'ok' ? tryAccount.outcome : tryKey.outcome;
    let own: Counted;
    let its: Counted;
    if (outcome === 'ok') {
      own = countWindows(slots, windows, now, stagger, cost);
      its = countWindows(key.slots, key.windows, now, 0, cost);
    } else {
      // Counted in neither: a part that would have taken shows its numbers as they stand.
      own = tryAccount.outcome === 'ok' ? countWindows(slots, windows, now, stagger, 0) : tryAccount;
      its = tryKey.outcome === 'ok' ? countWindows(key.slots, key.windows, now, 0, 0) : tryKey;
    }
    const keyStates = its.states.map((state) => ({ ...state, key: true as const }));
    const joined: Counted = {
      outcome,
      states: [...own.states, ...keyStates],
      retries: [...own.retries, ...its.retries],
      ...(own.lease ? { lease: own.lease } : {}),
    };
    return admission(joined, precheckOf(a, credits, now), `${a.hot!.surface}:`);
  }

  /** admitAccount past its common case: a pre-check, several windows, or a denial. */
  private counted(
    a: ModelAccount,
    slots: Slot[],
    windows: readonly Window[],
    now: number,
    subject: string,
    cost: number,
    credits: number,
    state: RateLimitState | undefined,
  ): Admission {
    if (state !== undefined) return admitted(state, [state], precheckOf(a, credits, now));
    const counted = countWindows(slots, windows, now, this.core.staggerOf(subject), cost);
    return admission(counted, precheckOf(a, credits, now), `${a.hot!.surface}:`);
  }

  /** Sets or (windows: null) clears one subject's own windows on a surface. */
  override(subject: string, options: OverrideOptions): void {
    setOverride(this.core, subject, options);
  }

  /** Frees the place a request took under a concurrency limit; whether it was taken. */
  release(subject: string, lease: string): boolean {
    const id = subjectId(subject);
    const { id: leaseId, surface, policy } = leaseOf(lease);
    const now = this.core.now();
    const slots = policy === undefined ? this.core.state.get(id)?.windows.get(surface) : this.core.counters.get(`${id}\0${policy}\0${surface}`, now);
    return releasePlace(slots, Number(leaseId), now);
  }

  /** The subject's overrides that have not ended. */
  overrides(subject: string): Override[] {
    return listOverrides(this.core, subject);
  }

  /** The surface's windows as they stand, counting nothing. */
  peek(subject: string, options: LimitTarget = {}): LimitState {
    const id = subjectId(subject);
    const target = this.target(id, options);
    return limitState(countWindows(target.slots, target.windows, this.core.now(), this.core.staggerOf(id), 0));
  }

  /** Clears the subject's counts on the surface. */
  reset(subject: string, options: LimitTarget = {}): void {
    const id = subjectId(subject);
    const target = this.target(id, options);
    resetWindows(target.slots, target.windows, this.core.now(), this.core.staggerOf(id));
  }

  /** The windows and slots of a subject on a surface: a policy's or the account's. */
  private target(subject: string, options: LimitTarget): { windows: readonly Window[]; slots: Slot[] } {
    const now = this.core.now();
    if (options.policy !== undefined) {
      const surface = surfaceName('Surface', options.surface ?? 'api');
      const windows = windowsInForce(this.core, subject, options.policy, surface, policyWindows(this.core.policies, options.policy, surface), now);
      return { windows, slots: this.core.counters.get(`${subject}\0${options.policy}\0${surface}`, now) ?? [] };
    }
    const surface = this.core.accountSurface(options.surface ?? 'api');
    const a = this.core.account(subject);
    return {
      windows: windowsInForce(this.core, subject, undefined, surface, surfaceWindows(a.plan.limits, subject, surface), now),
      slots: slotsOf(a, surface),
    };
  }
}

/** The account's slots on a surface, made on first use. */
function slotsOf(a: ModelAccount, surface: string): Slot[] {
  let slots = a.windows.get(surface);
  if (slots === undefined) {
    slots = [];
    a.windows.set(surface, slots);
  }
  return slots;
}

/**
 * The credit pre-check, read-only: no rollover on admit, so past the cycle's end it sees the
 * next allowance, and grants as they stand at now (docs/grants.md#listing).
 */
function precheckOf(a: ModelAccount, credits: number, now: number): Allowed['credits'] {
  if (credits === 0) return undefined;
  const balance = now >= a.cycleEnd ? a.nextAllowance : a.balance;
  const available = a.grants === undefined ? balance : availableAt(a, now);
  return { sufficient: available >= credits, balance, needed: credits, available };
}

/** The admission a count answers, with the pre-check when one was asked. */
function admission(counted: Counted, precheck: Allowed['credits'], leaseTarget: string): Admission {
  const { outcome, states, retries } = counted;
  const shadowDenials = shadowDenialsOf(states, retries);
  const lease = counted.lease ? leaseText(counted.lease, leaseTarget) : undefined;
  if (outcome === 'ok' && states.length === 1 && !states[0]!.shadow) return admitted(states[0]!, states, precheck, { shadowDenials, lease });
  const { index, retryAfterMs } = mostRestrictive(states, retries);
  const rateLimit = states[index]!;
  if (outcome !== 'ok') return denied(outcome, rateLimit, states, retryAfterMs, shadowDenials);
  return admitted(rateLimit, states, precheck, { shadowDenials, lease });
}
