/**
 * Redis key names. Every key of an account carries the hash tag {<accountId>} so each script
 * touches one cluster slot (SPEC §2); the only other key is the deployment-wide sweep index,
 * touched alone. Names are built on demand: a request needs two or three of them.
 */
export class AccountKeys {
  private readonly base: string;

  constructor(
    prefix: string,
    /** The validated account id. */
    readonly id: string,
  ) {
    this.base = `${prefix}:{${id}}:`;
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
  get activeJobs(): string {
    return `${this.base}ja`;
  }
  get jobList(): string {
    return `${this.base}jl`;
  }
  /** Job hashes are jobPrefix + jobId, in the account's slot. */
  get jobPrefix(): string {
    return `${this.base}j:`;
  }
  job(jobId: string): string {
    return `${this.base}j:${jobId}`;
  }
  /** Item ids whose results a job took (lua/lib/jobs.lua). */
  jobItems(jobId: string): string {
    return `${this.base}j:${jobId}:i`;
  }
  /** Prefix of a surface's window counters: prefix + window number (lua/lib/window.lua). */
  counters(surface: "api" | "web"): string {
    return `${this.base}rl:${surface}:`;
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

/** The key names of an account whose id is already validated. */
export function accountKeys(prefix: string, accountId: string): AccountKeys {
  return new AccountKeys(prefix, accountId);
}
