/**
 * Typed errors with a stable `name` and `code`. Denied requests and insufficient
 * credits are values, not errors; these are thrown only for bad input, missing records and an
 * unreachable quota store. `isTollgateError` works across duplicate installs of the package.
 * `TollgateError` and `isTollgateError` are also exported by the package's root.
 *
 * @module tollgate/errors
 */
const BRAND = Symbol.for('tollgate.error');

/** The stable `code` of each TollgateError, for checks that survive duplicate installs. */
export type TollgateErrorCode =
  | 'invalid_input'
  | 'unknown_plan'
  | 'account_not_found'
  | 'account_exists'
  | 'hold_not_found'
  | 'grant_not_found'
  | 'key_limit'
  | 'unavailable'
  | 'eviction_policy';

/** The base of every error tollgate throws: a stable `name` and `code`. */
export class TollgateError extends Error {
  /** @internal The brand isTollgateError looks for, the same in every copy of the package. */
  readonly [BRAND] = true;
  override readonly name: string = 'TollgateError';
  constructor(
    /** What went wrong, stable across versions: test it rather than the message. */
    readonly code: TollgateErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Bad input to the library, thrown before Redis is touched. */
export class InvalidInputError extends TollgateError {
  override readonly name = 'InvalidInputError';
  constructor(message: string) {
    super('invalid_input', message);
  }
}

/** A plan name that is not in the plan table, thrown before Redis is touched. */
export class UnknownPlanError extends TollgateError {
  override readonly name = 'UnknownPlanError';
  constructor(
    /** The name given. */
    readonly plan: string,
    known: readonly string[],
  ) {
    super('unknown_plan', `Unknown plan "${plan}"; known plans: ${known.join(', ')}`);
  }
}

/** The subject has no account (a call that needs one: admit without a policy, charge, holds). */
export class AccountNotFoundError extends TollgateError {
  override readonly name = 'AccountNotFoundError';
  constructor(
    /** The subject. */
    readonly accountId: string,
  ) {
    super('account_not_found', `No account "${accountId}"`);
  }
}

/**
 * accounts.create for a subject that already has an account (409), or whose account is gone
 * while its records survive (its journal, ended cycles or holds: the account was evicted), so
 * that a lost account is never funded again from scratch.
 */
export class AccountExistsError extends TollgateError {
  override readonly name = 'AccountExistsError';
  constructor(
    /** The subject. */
    readonly accountId: string,
    /** What exists: the account, or the surviving records of one that is gone. */
    readonly found: 'account' | 'journal' | 'cycles' | 'holds' = 'account',
  ) {
    super(
      'account_exists',
      found === 'account'
        ? `Account "${accountId}" already exists`
        : `Account "${accountId}" is gone but its ${found === 'journal' ? 'credit journal' : found === 'cycles' ? 'ended cycles' : 'holds'} survive: the account was lost (a Redis that evicts keys?); restore it rather than create it again`,
    );
  }
}

/** No hold of that id for this subject (another subject's hold is not found either). */
export class HoldNotFoundError extends TollgateError {
  override readonly name = 'HoldNotFoundError';
  constructor(
    /** The hold id given. */
    readonly holdId: string,
  ) {
    super('hold_not_found', `No hold "${holdId}" for this subject`);
  }
}

/** No grant with this id for the subject (credits.voidGrant). */
export class GrantNotFoundError extends TollgateError {
  override readonly name = 'GrantNotFoundError';
  constructor(
    /** The grant id given. */
    readonly grantId: string,
  ) {
    super('grant_not_found', `No grant "${grantId}" for this subject`);
  }
}

/** A subject already has as many keys that never expire as allowed; revoke one first. */
export class KeyLimitError extends TollgateError {
  override readonly name = 'KeyLimitError';
  constructor(
    /** The subject. */
    readonly subject: string,
    /** The most keys that never expire a subject may hold (createTollgate's keys.maxKeys). */
    readonly max: number,
  ) {
    super('key_limit', `Subject "${subject}" already has ${max} keys that never expire; revoke one first`);
  }
}

/**
 * The quota store (Redis) is unreachable, failed, or answered slower than the configured
 * timeout. Charged operations fail closed on it. When it is thrown after a script
 * was sent, the script may still have run: retry charges with the same operation id.
 */
export class StoreUnavailableError extends TollgateError {
  override readonly name: string = 'StoreUnavailableError';
  /**
   * On a failed credit movement: the id to retry it with, and the retry applies once (a
   * charge's operation id, the library's own when the caller gave none; an opened hold's id;
   * a settled item's id). A charge's id is kept at least 60 s.
   */
  readonly operationId?: string;
  constructor(message: string, options?: { cause?: unknown; operationId?: string }) {
    super('unavailable', message, options);
    if (options?.operationId !== undefined) this.operationId = options.operationId;
  }
}

/**
 * A credit movement that durability (createTollgate's `durability`) could not confirm in
 * time: the replicas it asks for did not all confirm it, or its reply never came. It may have
 * been applied on the primary, and a primary lost now would take it along. The store is
 * unavailable for it (code "unavailable": hosts answer 503 and callers retry); retry
 * with `operationId`, and the retry applies once: a charge's operation id (the library's own
 * when the caller gave none), an opened hold's hold id (`holdId`), a settled or spent item's
 * item id, an ended hold's hold id, or the swept subject's id.
 */
export class UnconfirmedError extends StoreUnavailableError {
  override readonly name = 'UnconfirmedError';
  /** The id to retry the movement with: it applies once. */
  declare readonly operationId: string;
  constructor(operationId: string, message: string, options?: { cause?: unknown }) {
    super(message, { ...options, operationId });
  }
}

/**
 * A credit movement or an account creation refused because a Redis server that holds
 * tollgate's keys may evict them: its `maxmemory-policy` is not `noeviction`, or it would not
 * say (INFO refused). An evicted account, hold or operation id loses credits or charges twice,
 * so nothing that moves credits runs there; admits keep working. Fix the server
 * (`CONFIG SET maxmemory-policy noeviction`, and the same in its configuration file), or accept
 * the risk with createTollgate's `acceptEviction: true`.
 */
export class EvictionPolicyError extends TollgateError {
  override readonly name = 'EvictionPolicyError';
  constructor(
    /** The policy found (e.g. "volatile-lru", "allkeys-lru"), or "unknown" when the server would not say. */
    readonly policy: string,
    /** The server that has it ("host:port" where known). */
    readonly server: string,
    options?: { cause?: unknown },
  ) {
    const found = policy === 'unknown' ? 'tollgate could not read its maxmemory-policy (INFO refused)' : `its maxmemory-policy is ${policy}`;
    super(
      'eviction_policy',
      `Redis ${server} may evict tollgate's keys: ${found}. Credit movements and account creation are refused, since an evicted account, hold or operation id loses credits or charges them twice. Set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in the server's configuration), or pass createTollgate({ acceptEviction: true }) to accept the risk.`,
      options,
    );
  }
}

/**
 * Whether `error` is a TollgateError (of `code`, when given), also when it comes from another
 * copy of the package, where instanceof would say no.
 */
export function isTollgateError(error: unknown, code?: TollgateErrorCode): error is TollgateError {
  if (typeof error !== 'object' || error === null) return false;
  const candidate = error as { [BRAND]?: unknown; code?: unknown };
  return candidate[BRAND] === true && (code === undefined || candidate.code === code);
}

/** @internal An operation id sent again with other terms than it was first used with (the library and tollgate/model). */
export function operationReused(operationId: string): InvalidInputError {
  return new InvalidInputError(`Operation id "${operationId}" was already used with other terms: an operation id names one operation`);
}
