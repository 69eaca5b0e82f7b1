/**
 * Boundary checks (validate at the boundary, trust inside). Each throws an
 * InvalidInputError with a message that names the bad value, before Redis is touched.
 */
import { InvalidInputError } from '../errors.ts';

const SUBJECT_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
const PRINTABLE_ASCII = /^[\x20-\x7e]{1,255}$/;

/** 1-128 chars of [A-Za-z0-9_.:-]; a brace would break the cluster hash tag. */
export function subjectId(value: unknown): string {
  if (typeof value !== 'string' || !SUBJECT_ID.test(value)) {
    throw new InvalidInputError(`Subject id must be 1-128 characters of A-Z a-z 0-9 _ . : - (got ${describe(value)})`);
  }
  return value;
}

/** Idempotency-Key (and operation ids): 1-255 printable ASCII characters. */
export function printableKey(what: string, value: unknown): string {
  if (typeof value !== 'string' || !PRINTABLE_ASCII.test(value)) {
    throw new InvalidInputError(`${what} must be 1-255 printable ASCII characters (got ${describe(value)})`);
  }
  return value;
}

/**
 * The most credits a cycle may grant. The scripts store numbers as Lua prints them, with 14
 * significant digits, so a balance of 10^14 or more would be stored rounded.
 */
export const MAX_ALLOWANCE = 99_999_999_999_999;

/** A whole, non-negative, safe amount of credits or items. */
export function count(what: string, value: unknown, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `${min}..${max}`;
    throw new InvalidInputError(`${what} must be a whole number ${range} (got ${describe(value)})`);
  }
  return value;
}

export function oneOf<T extends string>(what: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new InvalidInputError(`${what} must be one of ${allowed.join(', ')} (got ${describe(value)})`);
  }
  return value as T;
}

/** An instant as a Date or ms since the epoch. */
export function instant(what: string, value: unknown): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) {
    throw new InvalidInputError(`${what} must be a Date or whole ms since the epoch (got ${describe(value)})`);
  }
  return ms;
}

/** An optional id chosen by the caller (a hold id): 1-64 of A-Z a-z 0-9 _ -. */
export function shortId(what: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(value)) {
    throw new InvalidInputError(`${what} must be 1-64 characters of A-Z a-z 0-9 _ - (got ${describe(value)})`);
  }
  return value;
}

export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  return typeof value;
}
