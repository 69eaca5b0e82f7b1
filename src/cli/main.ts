#!/usr/bin/env node
/**
 * `tollgate`, the operator CLI (`npx tollgate --help`): one customer's limits, credits, holds
 * and keys, the journal, the sweep, and the accounts of a deployment, on REDIS_URL or --redis.
 * With --json, stdout carries only JSON; progress and warnings go to stderr.
 */
import { parseArgs } from 'node:util';
import { isTollgateError } from '../index.ts';
import {
  accountsList,
  adjust,
  EXIT,
  grant,
  grantsList,
  history,
  inspect,
  journal,
  keysIssue,
  keysList,
  keysRevoke,
  reconcile,
  refund,
  subjectArg,
  sweep,
  usage,
  voidGrant,
  type MovementOptions,
  type Outcome,
  type Setup,
} from './commands.ts';
import type { GrantKind } from '../rules/grants.ts';
import { connect, type Connection } from './connect.ts';

const HELP = `Usage: tollgate <command> [arguments] [options]
Looks at and manages tollgate's state in Redis.

Commands:
  inspect <subject>           plan, windows and counts, credits, holds, keys (no secrets)
  usage <subject>             quota state on --surface (default api)
  history <subject>           credits spent and refunded per day (--days, default 30)
  reconcile <subject>         the journal against the stored credits (exit 4 if they differ)
  journal <subject>           credit movements (--since t, --format text|json|csv)
  keys list <subject>         API keys, without secrets
  keys issue <subject>        a new key, printed once (--name, --ttl ms, --surfaces a,b)
  keys revoke <subject> <id>  revokes a key
  grants list <subject>       sources of credits in spend order (--ended adds ended ones)
  grant <subject>             --amount n [--kind paid|promotional|adjustment] [--priority p]
                              [--effective-at t] [--expires-at t] [--reason r]
  void <subject> <grantId>    voids what is left of a grant [--reason r]
  adjust <subject>            --amount=+n adds credits, --amount=-n takes them; --reason r
  refund <subject> <charge>   returns a charge (its operation id) to the sources that paid
                              [--amount n, default all that is left] [--reason r]
  accounts list               every account under the prefix (SCAN of each server)
  sweep                       ends lapsed holds, with their refunds

Options:
  --redis <url>      default: REDIS_URL
  --cluster          the URL is a node of a Redis Cluster
  --prefix <p>       the deployment's key prefix (default tg)
  --key-prefix <p>   the API keys' prefix (default tgk)
  --client <name>    node-redis or ioredis (default: node-redis if installed)
  --grants-max <n>   createTollgate's grants.max (default 16)
  --json             only JSON on stdout (messages on stderr)
  --help             this help

grant, void, adjust and refund take --operation-id <id>: the same id applies once; without
one, a new id is made and printed. t: ms since the epoch or an ISO date.

Exit codes: 0 done, 1 failure, 2 bad command line, 3 no such account, key, grant or charge,
4 reconcile found a difference, 5 credit movement refused.
`;

const OPTIONS = {
  redis: { type: 'string' },
  cluster: { type: 'boolean' },
  prefix: { type: 'string' },
  'key-prefix': { type: 'string' },
  client: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  surface: { type: 'string' },
  days: { type: 'string' },
  since: { type: 'string' },
  format: { type: 'string' },
  name: { type: 'string' },
  ttl: { type: 'string' },
  surfaces: { type: 'string' },
  amount: { type: 'string' },
  kind: { type: 'string' },
  priority: { type: 'string' },
  'effective-at': { type: 'string' },
  'expires-at': { type: 'string' },
  reason: { type: 'string' },
  'operation-id': { type: 'string' },
  ended: { type: 'boolean' },
  'grants-max': { type: 'string' },
} as const;

type Flags = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

class UsageError extends Error {}

function whole(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${flag} must be a whole number (got "${value}")`);
  return Number(value);
}

/** A whole number that may be signed (`--amount=-50`). */
function signed(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[+-]?\d+$/.test(value)) throw new UsageError(`--${flag} must be a whole number (got "${value}")`);
  return Number(value);
}

function instantFlag(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw new UsageError(`--${flag} must be ms since the epoch or an ISO date (got "${value}")`);
  return ms;
}

const since = (value: string | undefined) => instantFlag('since', value);

function movement(flags: Flags): MovementOptions {
  return {
    ...(flags.reason === undefined ? {} : { reason: flags.reason }),
    ...(flags['operation-id'] === undefined ? {} : { operationId: flags['operation-id'] }),
  };
}

/** The command named by the positionals, to run once connected. */
function command(words: string[], flags: Flags): (setup: Setup) => Promise<Outcome> {
  const [name, ...rest] = words;
  const subject = (at: number, what: string) => subjectArg(rest[at], what);
  switch (name) {
    case 'inspect':
      return (s) => inspect(s, subject(0, 'inspect'));
    case 'usage':
      return (s) => usage(s, subject(0, 'usage'), flags.surface);
    case 'history': {
      const days = whole('days', flags.days);
      return (s) => history(s, subject(0, 'history'), days);
    }
    case 'reconcile':
      return (s) => reconcile(s, subject(0, 'reconcile'));
    case 'sweep':
      return (s) => sweep(s);
    case 'journal': {
      const format = flags.format ?? (flags.json ? 'json' : 'text');
      if (format !== 'text' && format !== 'json' && format !== 'csv') throw new UsageError(`--format must be text, json or csv (got "${format}")`);
      const from = since(flags.since);
      return (s) => journal(s, subject(0, 'journal'), from, format);
    }
    case 'accounts':
      if (rest[0] !== 'list') throw new UsageError('accounts takes one subcommand: tollgate accounts list');
      return (s) => accountsList(s);
    case 'grants':
      if (rest[0] !== 'list') throw new UsageError('grants takes one subcommand: tollgate grants list <subject>');
      return (s) => grantsList(s, subjectArg(rest[1], 'grants list'), flags.ended === true);
    case 'grant': {
      const amount = signed('amount', flags.amount);
      if (amount === undefined) throw new UsageError('grant needs --amount <credits>: tollgate grant <subject> --amount 500');
      const priority = whole('priority', flags.priority);
      const effectiveAt = instantFlag('effective-at', flags['effective-at']);
      const expiresAt = instantFlag('expires-at', flags['expires-at']);
      const request = {
        amount,
        ...(flags.kind === undefined ? {} : { kind: flags.kind as GrantKind }),
        ...(priority === undefined ? {} : { priority }),
        ...(effectiveAt === undefined ? {} : { effectiveAt }),
        ...(expiresAt === undefined ? {} : { expiresAt }),
        ...movement(flags),
      };
      return (s) => grant(s, subject(0, 'grant'), request);
    }
    case 'void': {
      const grantId = rest[1];
      if (grantId === undefined) throw new UsageError('void needs a subject and a grant id: tollgate void <subject> <grantId>');
      return (s) => voidGrant(s, subject(0, 'void'), grantId, movement(flags));
    }
    case 'adjust': {
      const amount = signed('amount', flags.amount);
      if (amount === undefined) throw new UsageError('adjust needs --amount=+n or --amount=-n: tollgate adjust <subject> --amount=+50 --reason "..."');
      return (s) => adjust(s, subject(0, 'adjust'), amount, movement(flags));
    }
    case 'refund': {
      const charge = rest[1];
      if (charge === undefined) throw new UsageError("refund needs a subject and the charge's operation id: tollgate refund <subject> <operationId>");
      const amount = signed('amount', flags.amount);
      return (s) => refund(s, subject(0, 'refund'), charge, amount, movement(flags));
    }
    case 'keys': {
      const [sub, who, keyId] = rest;
      if (sub === 'list') return (s) => keysList(s, subjectArg(who, 'keys list'));
      if (sub === 'issue') {
        const ttlMs = whole('ttl', flags.ttl);
        const options = {
          ...(flags.name === undefined ? {} : { name: flags.name }),
          ...(ttlMs === undefined ? {} : { ttlMs }),
          ...(flags.surfaces === undefined ? {} : { surfaces: flags.surfaces.split(',') }),
        };
        return (s) => keysIssue(s, subjectArg(who, 'keys issue'), options);
      }
      if (sub === 'revoke') {
        if (keyId === undefined) throw new UsageError('keys revoke needs a subject and a key id: tollgate keys revoke <subject> <keyId>');
        return (s) => keysRevoke(s, subjectArg(who, 'keys revoke'), keyId);
      }
      throw new UsageError('keys takes list, issue or revoke');
    }
    default:
      throw new UsageError(name === undefined ? 'no command given (tollgate --help lists them)' : `unknown command "${name}" (tollgate --help lists them)`);
  }
}

function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError || isTollgateError(error, 'invalid_input')) return EXIT.usage;
  if (isTollgateError(error, 'account_not_found') || isTollgateError(error, 'grant_not_found')) return EXIT.notFound;
  return EXIT.failure;
}

/** Runs the CLI on these arguments; resolves with the exit code. */
async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let connection: Connection | undefined;
  try {
    const { values: flags, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    if (flags.help || positionals[0] === 'help') {
      process.stdout.write(HELP);
      return EXIT.ok;
    }
    const run = command(positionals, flags);
    const grantsMax = whole('grants-max', flags['grants-max']);
    const url = flags.redis ?? env.REDIS_URL;
    if (!url) throw new UsageError('no Redis to use: pass --redis <url> or set REDIS_URL');
    const client = flags.client;
    if (client !== undefined && client !== 'node-redis' && client !== 'ioredis')
      throw new UsageError(`--client must be node-redis or ioredis (got "${client}")`);
    connection = await connect(url, flags.cluster === true, client);
    const outcome = await run({ connection, prefix: flags.prefix ?? 'tg', keyPrefix: flags['key-prefix'] ?? 'tgk', grantsMax });
    // journal --format json prints JSON without --json too.
    const asJson = flags.json || (positionals[0] === 'journal' && flags.format === 'json');
    process.stdout.write(asJson ? `${JSON.stringify(outcome.value, null, 2)}\n` : outcome.text.map((line) => `${line}\n`).join(''));
    return outcome.exitCode ?? EXIT.ok;
  } catch (error) {
    const code = error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? EXIT.usage : exitCodeOf(error);
    process.stderr.write(`tollgate: ${error instanceof Error ? error.message : String(error)}\n`);
    return code;
  } finally {
    await connection?.close().catch(() => {});
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
