/**
 * Redis key names. Every key of a subject carries the hash tag {<subject>}, so each script
 * touches one cluster slot; the only other key is the deployment-wide sweep index,
 * touched alone. Names are built when asked for: a request needs two or three of them.
 */
import type { SubjectKeyNames } from "./scripts/script.ts";

export class SubjectKeys implements SubjectKeyNames {
  private readonly base: string;

  constructor(
    prefix: string,
    /** The validated subject id. */
    readonly subject: string,
  ) {
    this.base = `${prefix}:{${subject}}:`;
  }

  get account(): string {
    return `${this.base}a`;
  }
  get cycles(): string {
    return `${this.base}cy`;
  }
  get journal(): string {
    return `${this.base}jn`;
  }
  get history(): string {
    return `${this.base}d`;
  }
  get holdsActive(): string {
    return `${this.base}ha`;
  }
  get holdList(): string {
    return `${this.base}hl`;
  }
  /** Hold hashes are holdPrefix + hold id, in the subject's slot. */
  get holdPrefix(): string {
    return `${this.base}h:`;
  }
  hold(holdId: string): string {
    return `${this.base}h:${holdId}`;
  }
  /** Item ids a hold has settled. */
  holdItems(holdId: string): string {
    return `${this.base}h:${holdId}:i`;
  }
  /**
   * A policy's window counters for this subject: policyCounters + surface + ":" + ...
   * The account's own counters are "r:" + surface + ":" + ..., derived
   * from the account key in the scripts (account_counters in lua/lib/account.lua).
   */
  policyCounters(policy: string): string {
    return `${this.base}r:${policy}.`;
  }
  operation(operationId: string): string {
    return `${this.base}op:${operationId}`;
  }
  idempotency(key: string): string {
    return `${this.base}ik:${key}`;
  }
}

export function sweepIndexKey(prefix: string): string {
  return `${prefix}:sweep`;
}
