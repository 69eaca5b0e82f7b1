/**
 * Redis key names. Every key of a subject carries the hash tag {<subject>}, so each script
 * touches one cluster slot; the only other key is the deployment-wide sweep index,
 * touched alone. Names are built when asked for: a request needs two or three of them.
 */
import type { SubjectKeyNames } from './scripts/script.ts';

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
  get holdsEnded(): string {
    return `${this.base}he`;
  }
  get holdList(): string {
    return `${this.base}hl`;
  }
  /** The subject's recent operation ids, and the ids of holds no longer kept. */
  get operations(): string {
    return `${this.base}op`;
  }
  /** The subject's events not yet handled by every consumer group (docs/events.md). */
  get outbox(): string {
    return `${this.base}ev`;
  }
  /** A hold's hash, with the ids of the items it settled. */
  hold(holdId: string): string {
    return `${this.base}h:${holdId}`;
  }
  /**
   * A policy subject's counts on one surface of a policy. An account's
   * own counts live in its hash.
   */
  policyCounters(policy: string, surface: string): string {
    return `${this.base}r:${policy}.${surface}`;
  }
  idempotency(key: string): string {
    return `${this.base}ik:${key}`;
  }
}

export function sweepIndexKey(prefix: string): string {
  return `${prefix}:sweep`;
}

/** Deployment-wide scripts name only their own keys; no subject is involved. */
export const NO_SUBJECT = {
  subject: '',
  account: '',
  cycles: '',
  journal: '',
  history: '',
  holdsActive: '',
  holdsEnded: '',
  holdList: '',
  operations: '',
  outbox: '',
};
