/**
 * What each command of the operator CLI does: read or change one subject's state through the
 * public API (its credit grants, voids, adjustments and refunds included), or list accounts
 * and sweep holds. The CLI has no plan table: a command about a subject takes the windows,
 * allowance and holds rules the account holds (accounts.limits) as its table, so any surface
 * the account has is known.
 */
import { randomBytes } from 'node:crypto';
import { SubjectKeys } from '../redisKeys.ts';
import { AccountNotFoundError, InvalidInputError } from '../errors.ts';
import { createTollgate, type PlanTable, type Tollgate } from '../index.ts';
import { compareSources, cycleGrantId, type Grant, type GrantRequest } from '../rules/grants.ts';
import type { Connection } from './connect.ts';

/** The options every command takes, from the command line. */
export interface Setup {
  connection: Connection;
  /** The deployment's key prefix (createTollgate's `prefix`). */
  prefix: string;
  /** The API keys' prefix (createTollgate's `keys.prefix`). */
  keyPrefix: string;
  /** The deployment's live or pending grants per subject (createTollgate's `grants.max`); default 16. */
  grantsMax?: number;
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
  return createTollgate({
    redis: setup.connection.redis,
    prefix: setup.prefix,
    keys: { prefix: setup.keyPrefix },
    plans,
    telemetry: false,
    ...(setup.grantsMax === undefined ? {} : { grants: { max: setup.grantsMax } }),
  });
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

/** Every account under the prefix: accounts.list page after page (a SCAN of each master). */
export async function accountsList(setup: Setup): Promise<Outcome> {
  const accounts = tollgateWith(setup, NO_PLANS).accounts;
  const subjects: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await accounts.list({ cursor, count: 1000 });
    subjects.push(...page.subjects);
    cursor = page.cursor;
  } while (cursor !== null);
  const sorted = [...new Set(subjects)].sort();
  return { value: sorted, text: sorted };
}

/** Options of the commands that move credits: why, and the operation id that makes a re-run apply once. */
export interface MovementOptions {
  reason?: string;
  /** Default: a new id, printed, so that the command can be run again with it. */
  operationId?: string;
}

const newOperationId = () => `cli_${randomBytes(8).toString('hex')}`;
const retryHint = (operationId: string) => `(operation id ${operationId}: run again with --operation-id ${operationId} to retry it safely)`;

/** One source of credits as a line: id, kind, status, what is left, priority, expiry, reason. */
function grantLine(grant: Grant): string {
  const parts = [
    grant.grantId,
    grant.kind,
    grant.status,
    `${grant.remaining} left of ${grant.amount} (spent ${grant.spent}, held ${grant.held}${grant.expired ? `, expired ${grant.expired}` : ''}${grant.voided ? `, voided ${grant.voided}` : ''}${grant.refundedAfterEnd ? `, refunded after end ${grant.refundedAfterEnd}` : ''})`,
    `priority ${grant.priority}`,
    grant.status === 'pending' ? `from ${iso(grant.effectiveAt)}` : '',
    `expires ${iso(grant.expiresAt)}`,
    grant.reason ? JSON.stringify(grant.reason) : '',
  ];
  return parts.filter((part) => part !== '').join('  ');
}

const LIVE = new Set(['active', 'used']);
const seqOf = (grant: Grant) => (grant.grantId.startsWith('g') ? Number(grant.grantId.slice(1)) : 0);

/** Sources in spend order (live ones, numbered), then pending ones by start, then ended ones as listed. */
function inSpendOrder(grants: Grant[]): Array<{ order: number | null; grant: Grant }> {
  const live = grants.filter((grant) => LIVE.has(grant.status)).sort((a, b) => compareSources({ ...a, seq: seqOf(a) }, { ...b, seq: seqOf(b) }));
  const pending = grants.filter((grant) => grant.status === 'pending').sort((a, b) => a.effectiveAt - b.effectiveAt || seqOf(a) - seqOf(b));
  const ended = grants.filter((grant) => !LIVE.has(grant.status) && grant.status !== 'pending');
  return [...live.map((grant, i) => ({ order: i + 1, grant })), ...[...pending, ...ended].map((grant) => ({ order: null, grant }))];
}

export async function grantsList(setup: Setup, subject: string, ended: boolean): Promise<Outcome> {
  const listed = inSpendOrder(await (await forSubject(setup, subject)).credits.grants(subject, { ended }));
  return {
    value: listed.map(({ grant }) => grant),
    text: listed.map(({ order, grant }) => `${order === null ? '  ' : `${order}.`} ${grantLine(grant)}`),
  };
}

export async function grant(setup: Setup, subject: string, request: Omit<GrantRequest, 'operationId'> & { operationId?: string }): Promise<Outcome> {
  const tg = await forSubject(setup, subject);
  const operationId = request.operationId ?? newOperationId();
  const outcome = await tg.credits.grant(subject, { ...request, operationId });
  if (!outcome.ok) {
    return {
      value: outcome,
      text: [`refused: ${subject} has as many live or pending grants as it may (createTollgate's grants.max; --grants-max)`],
      exitCode: EXIT.refused,
    };
  }
  const granted = (await tg.credits.grants(subject, { ended: true })).find((source) => source.grantId === outcome.grantId);
  return {
    value: { ...outcome, operationId, grant: granted ?? null },
    text: [
      `${outcome.replayed ? 'already granted' : 'granted'} ${outcome.grantId} to ${subject} ${retryHint(operationId)}`,
      ...(granted ? [grantLine(granted)] : []),
    ],
  };
}

export async function voidGrant(setup: Setup, subject: string, grantId: string, options: MovementOptions): Promise<Outcome> {
  const operationId = options.operationId ?? newOperationId();
  const outcome = await (await forSubject(setup, subject)).credits.voidGrant(subject, grantId, { reason: options.reason, operationId });
  return {
    value: { ...outcome, grantId, operationId },
    text: [`${outcome.replayed ? 'already voided' : 'voided'} ${outcome.voided} credits of ${grantId} ${retryHint(operationId)}`],
  };
}

export async function adjust(setup: Setup, subject: string, amount: number, options: MovementOptions): Promise<Outcome> {
  const operationId = options.operationId ?? newOperationId();
  const outcome = await (await forSubject(setup, subject)).credits.adjust(subject, { amount, reason: options.reason as string, operationId });
  if (!outcome.ok) {
    return { value: outcome, text: [`refused: ${outcome.available} credits available, ${outcome.needed} needed`], exitCode: EXIT.refused };
  }
  const sources = outcome.sources.map((source) => `${source.grantId} ${source.amount}`).join(', ');
  return {
    value: { ...outcome, operationId },
    text: [
      `${outcome.replayed ? 'already adjusted' : 'adjusted'} ${subject} by ${amount > 0 ? '+' : ''}${amount}: ${amount > 0 ? `grant ${outcome.grantId}` : `taken from ${sources}`}; ${outcome.available} available ${retryHint(operationId)}`,
    ],
  };
}

export async function refund(setup: Setup, subject: string, charge: string, amount: number | undefined, options: MovementOptions): Promise<Outcome> {
  const operationId = options.operationId ?? newOperationId();
  const outcome = await (await forSubject(setup, subject)).credits.refund(subject, {
    charge,
    ...(amount === undefined ? {} : { amount }),
    reason: options.reason,
    operationId,
  });
  if (!outcome.ok) {
    const why =
      outcome.reason === 'unknown_charge'
        ? `no charge ${charge} on ${subject} is kept (a charge is refundable while its operation id is remembered: createTollgate's operationTtlMs)`
        : `more than what is left of charge ${charge} to refund`;
    return { value: outcome, text: [`refused: ${why}`], exitCode: outcome.reason === 'unknown_charge' ? EXIT.notFound : EXIT.refused };
  }
  const sources = outcome.sources.map((source) => `${source.grantId} ${source.amount}`).join(', ');
  return {
    value: { ...outcome, operationId },
    text: [`${outcome.replayed ? 'already refunded' : 'refunded'} ${outcome.refunded} of ${charge} to ${sources || 'no source'} ${retryHint(operationId)}`],
  };
}

/** One credit movement of the journal. */
export interface JournalEntry {
  /** When it was written (the Redis server's clock), ms since the epoch. */
  time: number;
  /** grant, charge, reserve, spend, refund, refund_ended, refund_charge, adjust, expire or void. */
  kind: string;
  amount: number;
  /** The billing cycle it applies to (a grant's entry: the cycle current then). */
  cycle: number;
  /** The operation or hold id. */
  ref: string;
  /** Whose credits moved: a grant's id, or `cycle:<n>` for the cycle's allowance. */
  source: string;
}

// The journal's stored field names (kind, amount, cycle, ref, source), as its script writes them.
const FIELDS: Record<string, keyof JournalEntry> = { k: 'kind', n: 'amount', c: 'cycle', r: 'ref', s: 'source' };

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
      if (field) (entry as unknown as Record<string, unknown>)[field] = field === 'amount' || field === 'cycle' ? Number(flat[i + 1]) : String(flat[i + 1]);
    }
    // An entry of the cycle's allowance names no source.
    if (entry.source === '') entry.source = cycleGrantId(entry.cycle);
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
  /** A credit movement refused: the grant limit, too few credits available, more than a charge to refund. */
  refused: 5,
} as const;

/** A subject id the API takes, or the usage error naming it. */
export function subjectArg(value: string | undefined, command: string): string {
  if (value === undefined || value === '') throw new InvalidInputError(`${command} needs a subject: tollgate ${command} <subject>`);
  return value;
}
