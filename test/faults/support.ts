// What the fault, cluster and soak tests share: clients configured the way a host should
// configure them, retries that keep an operation id, a ledger of what callers were told, and
// an audit of the stored state against that ledger (journal, reconcile, invariants). No
// vitest import at the top: the soak's child processes load this file too.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { fromIoredis, fromNodeRedis, isTollgateError, type AccountSnapshot, type ChargeOutcome, type Tollgate } from '../../src/index.ts';
import { SubjectKeys } from '../../src/redisKeys.ts';
import { checkInvariants, type InvariantViolation } from '../../src/model/index.ts';
import { rawCommand } from '../helpers/redisServer.ts';
import type { ClientKind, TestClient } from '../helpers/tollgate.ts';

export const isUnavailable = (error: unknown): boolean => isTollgateError(error, 'unavailable');

export interface ClientSetup {
  /**
   * Queue commands while the connection is down (both clients' default). Off, a command
   * issued then fails at once instead of running later, after its caller was told
   * "unavailable" (nothing charged while the store is unreachable; docs/errors.md).
   */
  offlineQueue?: boolean;
}

/**
 * A client of one server that reconnects by itself, quickly. ioredis always gets
 * autoResendUnfulfilledCommands: false: by default it sends a command again after a
 * reconnect when its reply was lost, so a script that had run runs twice, and its caller
 * is told of one run. Every credit movement now applies once even so (operation ids, the ids
 * the library makes up for charges, item ids, hold ids), but a caller that retries by itself
 * wants to hear of the failure. node-redis rejects such a command instead.
 */
export async function connectClient(kind: ClientKind, url: string, setup: ClientSetup = {}): Promise<TestClient> {
  const offlineQueue = setup.offlineQueue ?? true;
  if (kind === 'node-redis') {
    const client = createClient({
      url,
      disableOfflineQueue: !offlineQueue,
      socket: { connectTimeout: 1_000, reconnectStrategy: (retries: number) => Math.min(20 * 2 ** retries, 250) },
    });
    client.on('error', () => {});
    await client.connect();
    return {
      kind,
      topology: 'standalone',
      adapter: fromNodeRedis(client),
      command: (args) => client.sendCommand(args),
      close: async () => void (await client.close().catch(() => client.destroy())),
    };
  }
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: offlineQueue,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: offlineQueue ? 1 : 0,
    connectTimeout: 1_000,
    retryStrategy: (times: number) => Math.min(20 * 2 ** times, 250),
  });
  client.on('error', () => {});
  await client.connect();
  return {
    kind,
    topology: 'standalone',
    adapter: fromIoredis(client),
    command: (args) => client.call(args[0]!, ...args.slice(1)),
    close: async () => void (await client.quit().catch(() => client.disconnect())),
  };
}

/** Polls until check() is true; fails after timeoutMs. For real reconnects, never for credit time. */
export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 10_000, everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** The pid of the redis-server on this port, so a test can pause it (SIGSTOP) and resume it. */
export async function serverPid(port: number): Promise<number> {
  const info = await rawCommand(port, ['INFO', 'server']);
  const match = /process_id:(\d+)/.exec(String(info));
  if (!match) throw new Error(`no process_id in INFO server of port ${port}`);
  return Number(match[1]);
}

export interface Settled<T> {
  value: T;
  /** Attempts that failed with StoreUnavailableError before the one that answered. */
  failures: number;
}

/**
 * Runs attempt() until the store answers, as a caller that keeps its operation id does:
 * retries only StoreUnavailableError, with a short pause, until the deadline.
 */
export async function untilAnswered<T>(attempt: () => Promise<T>, deadlineMs = 20_000, pauseMs = 10): Promise<Settled<T>> {
  const deadline = Date.now() + deadlineMs;
  let failures = 0;
  for (;;) {
    try {
      return { value: await attempt(), failures };
    } catch (error) {
      if (!isUnavailable(error) || Date.now() > deadline) throw error;
      failures++;
      await sleep(pauseMs);
    }
  }
}

/**
 * What callers were told about charges with operation ids: the amount of every acknowledged
 * one, and how often an answer came only after the store had failed (ambiguous outcomes).
 */
export class ChargeLedger {
  readonly acknowledged = new Map<string, number>();
  insufficient = 0;
  /** Attempts that failed with StoreUnavailableError and were retried with the same id. */
  retries = 0;
  /** Charges acknowledged as replayed: an earlier attempt that reported a failure had applied. */
  appliedDespiteError = 0;

  /** Charges until acknowledged (or insufficient), retrying with the same operation id. */
  async charge(tg: Tollgate, accountId: string, operationId: string, required: number, optional = 0): Promise<ChargeOutcome> {
    const { value, failures } = await untilAnswered(() => tg.credits.charge(accountId, { required, optional, operationId }));
    this.record(operationId, value, failures);
    return value;
  }

  record(operationId: string, outcome: ChargeOutcome, failures: number): void {
    this.retries += failures;
    if (!outcome.ok) {
      this.insufficient++;
      return;
    }
    const earlier = this.acknowledged.get(operationId);
    if (earlier !== undefined && earlier !== outcome.charged) throw new Error(`${operationId} acknowledged as ${earlier} and then ${outcome.charged}`);
    this.acknowledged.set(operationId, outcome.charged);
    if (outcome.replayed && failures > 0) this.appliedDespiteError++;
  }
}

export interface JournalEntry {
  kind: string;
  amount: number;
  cycle: number;
  ref: string;
}

/** The account's journal as stored (XRANGE over the stream). */
export async function readJournal(command: (args: string[]) => Promise<unknown>, prefix: string, accountId: string): Promise<JournalEntry[]> {
  const raw = (await command(['XRANGE', new SubjectKeys(prefix, accountId).journal, '-', '+'])) as [string, string[]][];
  return raw.map(([, flat]) => {
    const f: Record<string, string> = {};
    for (let i = 0; i < flat.length; i += 2) f[flat[i]!] = flat[i + 1]!;
    return { kind: f.k!, amount: Number(f.n), cycle: Number(f.c), ref: f.r ?? '' };
  });
}

export interface ChargeAudit {
  acknowledged: number;
  /** Acknowledged charges missing from the journal (must be 0). */
  lost: number;
  /** Operation ids charged more than once in the journal (must be 0). */
  doubled: number;
  /** Charges in the journal that no caller was told about, with an id of the ledger's. */
  unacknowledged: number;
  /** The operation ids lost, doubled or unacknowledged, for the failure message. */
  details: string[];
}

/** Compares the journal's charges with what callers were told, operation id by operation id. */
export function auditCharges(journal: JournalEntry[], ledger: ChargeLedger, ownsId: (operationId: string) => boolean = () => true): ChargeAudit {
  const charged = new Map<string, number[]>();
  for (const entry of journal) {
    if (entry.kind !== 'charge' || entry.ref === '' || !ownsId(entry.ref)) continue;
    charged.set(entry.ref, [...(charged.get(entry.ref) ?? []), entry.amount]);
  }
  let lost = 0;
  let doubled = 0;
  const details: string[] = [];
  for (const [operationId, amount] of ledger.acknowledged) {
    const found = charged.get(operationId) ?? [];
    if (found.length === 0 || found[0] !== amount) {
      lost++;
      details.push(`lost: ${operationId} acknowledged ${amount}, journal [${found.join(', ')}]`);
    }
  }
  for (const [operationId, amounts] of charged) {
    if (amounts.length > 1) {
      doubled++;
      details.push(`doubled: ${operationId} charged [${amounts.join(', ')}]`);
    }
  }
  const unacknowledged = [...charged.keys()].filter((id) => !ledger.acknowledged.has(id));
  for (const id of unacknowledged) details.push(`unacknowledged: ${id}`);
  return { acknowledged: ledger.acknowledged.size, lost, doubled, unacknowledged: unacknowledged.length, details: details.slice(0, 20) };
}

export interface AccountAudit {
  reconciles: boolean;
  violations: InvariantViolation[];
  snapshot: AccountSnapshot;
}

/** The account's whole state: the journal reconciles with it and every credit invariant holds. */
export async function auditAccount(tg: Tollgate, accountId: string): Promise<AccountAudit> {
  const reconciliation = await tg.credits.reconcile(accountId);
  const snapshot = await tg.accounts.inspect(accountId);
  return { reconciles: reconciliation.matches, violations: checkInvariants(snapshot), snapshot };
}

/** auditAccount, asserted (in a vitest run; the soak's processes use auditAccount). */
export async function expectSound(tg: Tollgate, accountId: string): Promise<AccountSnapshot> {
  const { expect } = await import('vitest');
  const audit = await auditAccount(tg, accountId);
  expect(audit.violations, accountId).toEqual([]);
  expect(audit.reconciles, `${accountId}: the journal reconciles with balance, spent and held`).toBe(true);
  return audit.snapshot;
}
