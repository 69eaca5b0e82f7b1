/**
 * Typed errors with a stable `name` and `code` (SPEC §8). Denied requests and insufficient
 * credits are values, not errors; these are thrown only for bad input, missing records and an
 * unreachable quota store. `isTollgateError` works across duplicate installs of the package.
 */
const BRAND = Symbol.for("tollgate.error");

export type TollgateErrorCode =
  | "invalid_input"
  | "unknown_plan"
  | "account_not_found"
  | "account_exists"
  | "hold_not_found"
  | "key_limit"
  | "unavailable";

export class TollgateError extends Error {
  readonly [BRAND] = true;
  override readonly name: string = "TollgateError";
  constructor(
    readonly code: TollgateErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Bad input to the library, thrown before Redis is touched (SPEC §8). */
export class InvalidInputError extends TollgateError {
  override readonly name = "InvalidInputError";
  constructor(message: string) {
    super("invalid_input", message);
  }
}

export class UnknownPlanError extends TollgateError {
  override readonly name = "UnknownPlanError";
  constructor(readonly plan: string, known: readonly string[]) {
    super("unknown_plan", `Unknown plan "${plan}"; known plans: ${known.join(", ")}`);
  }
}

export class AccountNotFoundError extends TollgateError {
  override readonly name = "AccountNotFoundError";
  constructor(readonly accountId: string) {
    super("account_not_found", `No account "${accountId}"`);
  }
}

export class AccountExistsError extends TollgateError {
  override readonly name = "AccountExistsError";
  constructor(readonly accountId: string) {
    super("account_exists", `Account "${accountId}" already exists`);
  }
}

export class HoldNotFoundError extends TollgateError {
  override readonly name = "HoldNotFoundError";
  constructor(readonly holdId: string) {
    super("hold_not_found", `No hold "${holdId}" for this subject`);
  }
}

/** A subject already has as many keys that never expire as allowed; revoke one first. */
export class KeyLimitError extends TollgateError {
  override readonly name = "KeyLimitError";
  constructor(readonly subject: string, readonly max: number) {
    super("key_limit", `Subject "${subject}" already has ${max} keys that never expire; revoke one first`);
  }
}

/**
 * The quota store (Redis) is unreachable, failed, or answered slower than the configured
 * timeout. Charged operations fail closed on it (SPEC §8). When it is thrown after a script
 * was sent, the script may still have run: retry charges with the same operation id.
 */
export class StoreUnavailableError extends TollgateError {
  override readonly name: string = "StoreUnavailableError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("unavailable", message, options);
  }
}

/**
 * A credit movement that durability (createTollgate's `durability`) could not confirm in
 * time: the replicas it asks for did not all confirm it, or its reply never came. It may have
 * been applied on the primary, and a primary lost now would take it along. The store is
 * unavailable for it (code "unavailable": hosts answer 503 and callers retry, SPEC §8); retry
 * with `operationId`, and the retry applies once: a charge's operation id (the library's own
 * when the caller gave none), an opened hold's hold id (`holdId`), a settled or spent item's
 * item id, an ended hold's hold id, or the swept subject's id.
 */
export class UnconfirmedError extends StoreUnavailableError {
  override readonly name = "UnconfirmedError";
  constructor(
    readonly operationId: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isTollgateError(error: unknown, code?: TollgateErrorCode): error is TollgateError {
  if (typeof error !== "object" || error === null) return false;
  const candidate = error as { [BRAND]?: unknown; code?: unknown };
  return candidate[BRAND] === true && (code === undefined || candidate.code === code);
}
