/**
 * What each command of the operator CLI does: read or change one subject's state through the
 * public API, or list accounts and sweep holds. The CLI has no plan table: a command about a
 * subject takes the windows, allowance and holds rules the account holds (accounts.limits) as
 * its table, so any surface the account has is known.
 */
import { SubjectKeys } from '../redisKeys.ts';
import { AccountNotFoundError, InvalidInputError } from '../errors.ts';
import { createTollgate, type PlanTable, type Tollgate } from '../index.ts';
import type { Connection } from './connect.ts';

/** The options every command takes, from the command line. */
export interface Setup {
  connection: Connection;
  /** The deployment's key prefix (createTollgate's `prefix`). */
  prefix: string;
  /** The API keys' prefix (createTollgate's `keys.prefix`). */
  keyPrefix: string;
}

/** What a command answers: the value printed as JSON, its text lines, and the exit code. */
export interface Outcome {
  value: unknown;
  text: string[];
  exitCode?: number;
}

/** A placeholder table for commands about no subject in particular (sweep): nothing reads it. */
const NO_PLANS: PlanTable = {
  none: { limits: { api: [{ limit: 1, windowMs: 1000 }] }, credits: { allowance: 1, cycle: { months: 1 } }, holds: { cap: 1, maxItems: 1, surfaces: [] } },
};

function tollgateWith(setup: Setup, plans: PlanTable): Tollgate {
  return createTollgate({ redis: setup.connection.redis, prefix: setup.prefix, keys: { prefix: setup.keyPrefix }, plans, telemetry: false });
}

/** A tollgate whose plan table is the account's own numbers. */
async function forSubject(setup: Setup, subject: string): Promise<Tollgate> {
  const plan = await tollgateWith(setup, NO_PLANS).accounts.limits(subject);
  return tollgateWith(setup, {
    [plan.name]: { limits: plan.limits, credits: { allowance: Math.max(1, plan.credits.allowance), cycle: { months: 1 } }, holds: plan.holds },
  });
}

const iso = (ms: number | null) => (ms === null ? 'never' : new Date(ms).toISOString());

export async function inspect(setup: Setup, subject: string): Promise<Outcome> {
  const tg = await forSubject(setup, subject);
  const [state, keys] = await Promise.all([tg.accounts.inspect(subject), tg.keys.list(subject)]);
  const { plan, credits, cycle, windows, holds } = state;
  const open = holds.filter((hold) => hold.status === 'open');
  return {
    value: { subject, plan, credits, cycle, windows, holds, keys },
    text: [
      `${subject}: plan ${plan.name}`,
      `credits: balance ${credits.balance}, spent ${credits.spent}, held ${credits.held} of ${credits.allowance} (cycle ${cycle.id}, ${iso(cycle.start)} to ${iso(cycle.end)})`,
      ...Object.entries(windows).flatMap(([surface, states]) =>
        states.map((w) => `window ${surface}: ${w.limit - w.remaining}/${w.limit} used per ${w.windowMs / 1000} s, resets in ${Math.ceil(w.resetMs / 1000)} s`),
      ),
      `holds: ${open.length} open of ${holds.length} (cap ${plan.holds.cap})`,
      ...open.map((hold) => `hold ${hold.id}: ${hold.kind} on ${hold.surface}, held ${hold.held}, spent ${hold.spent}`),
      `keys: ${keys.length}`,
      ...keys.map((key) => `key ${key.keyId}${key.name ? ` "${key.name}"` : ''}: expires ${iso(key.expiresAt)}, surfaces ${key.surfaces?.join(',') ?? 'all'}`),
    ],
  };
}

export async function usage(setup: Setup, subject: string, surface: string | undefined): Promise<Outcome> {
  const tg = await forSubject(setup, subject);
  const value = await tg.usage(subject, surface === undefined ? {} : { surface });
  const { credits, rateLimit } = value;
  return {
    value,
    text: [
      `${subject}: plan ${value.plan}, ${rateLimit.surface} ${rateLimit.remaining}/${rateLimit.limit} left per ${rateLimit.windowMs / 1000} s, balance ${credits.balance} of ${credits.allowance}, ${value.holds.active} holds open`,
    ],
  };
}

export async function history(setup: Setup, subject: string, days: number | undefined): Promise<Outcome> {
  const tg = await forSubject(setup, subject);
  const value = await tg.credits.history(subject, days === undefined ? {} : { days });
  return { value, text: value.map((day) => `${iso(day.day).slice(0, 10)} spent ${day.spent} refunded ${day.refunded}`) };
}

export async function reconcile(setup: Setup, subject: string): Promise<Outcome> {
  const tg = await forSubject(setup, subject);
  const value = await tg.credits.reconcile(subject);
  const { journal, stored } = value;
  const line = (what: string, c: typeof journal) => `${what}: balance ${c.balance}, spent ${c.spent}, held ${c.held}`;
  const verdict = value.matches ? 'matches' : value.complete ? 'DOES NOT MATCH' : "cannot tell: the journal does not reach back to the cycle's start";
  return {
    value,
    text: [`${subject} cycle ${value.cycle}: ${verdict} (${value.entries} entries)`, line('journal', journal), line('stored', stored)],
    exitCode: value.matches ? 0 : EXIT.mismatch,
  };
}

export async function sweep(setup: Setup): Promise<Outcome> {
  const value = await tollgateWith(setup, NO_PLANS).holds.sweep();
  return { value, text: [`swept ${value.subjects} subjects, ended ${value.ended} lapsed holds`] };
}

export async function keysList(setup: Setup, subject: string): Promise<Outcome> {
  const value = await (await forSubject(setup, subject)).keys.list(subject);
  return {
    value,
    text: value.map(
      (key) => `${key.keyId}\t${key.name}\tissued ${iso(key.createdAt)}\texpires ${iso(key.expiresAt)}\t${key.surfaces?.join(',') ?? 'all surfaces'}`,
    ),
  };
}

export async function keysIssue(setup: Setup, subject: string, options: { name?: string; ttlMs?: number; surfaces?: string[] }): Promise<Outcome> {
  const value = await (await forSubject(setup, subject)).keys.issue(subject, options);
  return { value, text: [value.key, `(key id ${value.keyId}: the key is shown this once)`] };
}

export async function keysRevoke(setup: Setup, subject: string, keyId: string): Promise<Outcome> {
  const revoked = await (await forSubject(setup, subject)).keys.revoke(subject, keyId);
  return { value: { subject, keyId, revoked }, text: [revoked ? `revoked ${keyId}` : `${subject} has no key ${keyId}`], exitCode: revoked ? 0 : EXIT.notFound };
}

/** Every account under the prefix: a SCAN of each master for the accounts' hashes. */
export async function accountsList(setup: Setup): Promise<Outcome> {
  const probe = new SubjectKeys(setup.prefix, 'x').account;
  const [head, tail] = [probe.slice(0, probe.indexOf('{x}')), probe.slice(probe.indexOf('{x}') + 3)];
  const subjects: string[] = [];
  for await (const key of setup.connection.scan(`${head}{*}${tail}`, 'hash')) {
    if (key.startsWith(`${head}{`) && key.endsWith(`}${tail}`)) subjects.push(key.slice(head.length + 1, key.length - tail.length - 1));
  }
  subjects.sort();
  return { value: subjects, text: subjects };
}

/** One credit movement of the journal. */
export interface JournalEntry {
  /** When it was written (the Redis server's clock), ms since the epoch. */
  time: number;
  /**
   * grant, charge, reserve, spend, refund or refund_ended; for credit grants also expire, void,
   * adjust and refund_charge (docs/grants.md#journal).
   */
  kind: string;
  amount: number;
  /** The billing cycle it applies to. */
  cycle: number;
  /** The operation or hold id. */
  ref: string;
  /** The source whose credits moved: `cycle:<n>` (the cycle's allowance) or a grant's id, `g<n>`. */
  source: string;
}

// The journal's stored field names (kind, amount, cycle, ref, source), as its scripts write
// them; an entry of the cycle's credits has no source field.
const FIELDS: Record<string, keyof JournalEntry> = { k: 'kind', n: 'amount', c: 'cycle', r: 'ref', s: 'source' };
const TEXT_FIELDS = new Set<keyof JournalEntry>(['kind', 'ref', 'source']);

export async function journal(setup: Setup, subject: string, sinceMs: number | undefined, format: 'text' | 'json' | 'csv'): Promise<Outcome> {
  const keys = new SubjectKeys(setup.prefix, subject);
  const raw = (await setup.connection.command(keys.journal, ['XRANGE', keys.journal, sinceMs === undefined ? '-' : String(sinceMs), '+'])) as Array<
    [string, string[]]
  >;
  if (raw.length === 0 && (await setup.connection.command(keys.account, ['EXISTS', keys.account])) === 0) throw new AccountNotFoundError(subject);
  const entries = raw.map(([id, flat]) => {
    const entry: JournalEntry = { time: Number(String(id).split('-')[0]), kind: '', amount: 0, cycle: 0, ref: '', source: '' };
    for (let i = 0; i < flat.length; i += 2) {
      const field = FIELDS[String(flat[i])];
      if (field) (entry as unknown as Record<string, unknown>)[field] = TEXT_FIELDS.has(field) ? String(flat[i + 1]) : Number(flat[i + 1]);
    }
    if (entry.source === '') entry.source = `cycle:${entry.cycle}`;
    return entry;
  });
  const csv = (text: string) => (/[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);
  const text =
    format === 'csv'
      ? ['time,kind,amount,cycle,ref,source', ...entries.map((e) => [iso(e.time), e.kind, e.amount, e.cycle, csv(e.ref), e.source].join(','))]
      : entries.map((e) => `${iso(e.time)}  ${e.kind.padEnd(13)} ${String(e.amount).padStart(8)}  cycle ${e.cycle}  ${e.source.padEnd(9)} ${e.ref}`.trimEnd());
  return { value: entries, text };
}

/** The CLI's exit codes. */
export const EXIT = {
  ok: 0,
  /** The store could not be reached, or another failure. */
  failure: 1,
  /** A command line the CLI does not understand. */
  usage: 2,
  /** No such account (or key). */
  notFound: 3,
  /** reconcile: the journal and the account disagree, or the journal cannot tell. */
  mismatch: 4,
} as const;

/** A subject id the API takes, or the usage error naming it. */
export function subjectArg(value: string | undefined, command: string): string {
  if (value === undefined || value === '') throw new InvalidInputError(`${command} needs a subject: tollgate ${command} <subject>`);
  return value;
}
