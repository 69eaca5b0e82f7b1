/**
 * Redis key names. Every key of an account carries the hash tag {<accountId>} so
 * each script touches one cluster slot (SPEC §2); the only other key is the deployment-wide
 * sweep index, touched alone.
 */
export interface AccountKeys {
  account: string;
  cycles: string;
  journal: string;
  activeJobs: string;
  jobList: string;
  /** Job hashes are jobPrefix + jobId, in the account's slot. */
  jobPrefix: string;
  job(jobId: string): string;
  operation(operationId: string): string;
  idempotency(key: string): string;
}

export function accountKeys(prefix: string, accountId: string): AccountKeys {
  const base = `${prefix}:{${accountId}}:`;
  return {
    account: `${base}a`,
    cycles: `${base}cy`,
    journal: `${base}jn`,
    activeJobs: `${base}ja`,
    jobList: `${base}jl`,
    jobPrefix: `${base}j:`,
    job: (jobId) => `${base}j:${jobId}`,
    operation: (operationId) => `${base}op:${operationId}`,
    idempotency: (key) => `${base}ik:${key}`,
  };
}

export function sweepIndexKey(prefix: string): string {
  return `${prefix}:sweep`;
}
