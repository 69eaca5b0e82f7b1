/**
 * The public face of each concept: what a tollgate on Redis and a tollgate in memory both
 * offer (their methods, not how either is built).
 */
import type { Accounts as AccountsOnRedis } from "./accounts.ts";
import type { Keys as KeysOnRedis } from "./apiKeys.ts";
import type { Credits as CreditsOnRedis } from "./credits.ts";
import type { Holds as HoldsOnRedis } from "./holds.ts";
import type { Idempotency as IdempotencyOnRedis } from "./idempotency.ts";
import type { Limits as LimitsOnRedis } from "./limits.ts";

type Face<T> = { [K in keyof T]: T[K] };

/** Accounts and their billing cycles (`tollgate.accounts`). */
export type Accounts = Face<AccountsOnRedis>;
/** Request limits (`tollgate.limits`): admit, peek, reset. */
export type Limits = Face<LimitsOnRedis>;
/** Credits (`tollgate.credits`): charge, reconcile, history. */
export type CreditsApi = Face<CreditsOnRedis>;
/** Holds (`tollgate.holds`): credits reserved upfront for bulk jobs and budgets. */
export type Holds = Face<HoldsOnRedis>;
/** API keys (`tollgate.keys`). */
export type Keys = Face<KeysOnRedis>;
/** Idempotency-Key support for opening holds (`tollgate.idempotency`). */
export type Idempotency = Face<IdempotencyOnRedis>;
