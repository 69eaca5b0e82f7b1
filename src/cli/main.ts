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
  EXIT,
  history,
  inspect,
  journal,
  keysIssue,
  keysList,
  keysRevoke,
  reconcile,
  subjectArg,
  sweep,
  usage,
  type Outcome,
  type Setup,
} from './commands.ts';
import { connect, type Connection } from './connect.ts';

const HELP = `tollgate: look at and manage tollgate's state in Redis

Usage: tollgate <command> [arguments] [options]

Commands:
  inspect <subject>            plan, windows with their counts, credits, holds, keys (no secrets)
  usage <subject>              the quota state on a surface (--surface, default api)
  history <subject>            credits spent and refunded per day (--days, default 30)
  reconcile <subject>          the journal added up against the stored credits (exit 4 if they differ)
  journal <subject>            the credit movements (--since <ms or ISO date>, --format text|json|csv)
  keys list <subject>          the subject's API keys, without secrets
  keys issue <subject>         a new key, printed once (--name, --ttl <ms>, --surfaces a,b)
  keys revoke <subject> <id>   revokes a key (exit 3 if there is none)
  accounts list                every account under the prefix (a SCAN of each server)
  sweep                        ends lapsed holds, with their refunds

Options:
  --redis <url>       the Redis to use (default: the REDIS_URL environment variable)
  --cluster           the URL is a node of a Redis Cluster
  --prefix <prefix>   the deployment's key prefix (default tg)
  --key-prefix <p>    the API keys' prefix (default tgk)
  --client <name>     node-redis or ioredis (default: node-redis when installed, else ioredis)
  --json              print JSON only on stdout (messages go to stderr)
  --help              print this help

Exit codes: 0 done, 1 failure (Redis unreachable, ...), 2 bad command line, 3 no such
account or key, 4 reconcile found a difference.
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
} as const;

type Flags = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

class UsageError extends Error {}

function whole(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${flag} must be a whole number (got "${value}")`);
  return Number(value);
}

function since(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw new UsageError(`--since must be ms since the epoch or an ISO date (got "${value}")`);
  return ms;
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
  if (isTollgateError(error, 'account_not_found')) return EXIT.notFound;
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
    const url = flags.redis ?? env.REDIS_URL;
    if (!url) throw new UsageError('no Redis to use: pass --redis <url> or set REDIS_URL');
    const client = flags.client;
    if (client !== undefined && client !== 'node-redis' && client !== 'ioredis')
      throw new UsageError(`--client must be node-redis or ioredis (got "${client}")`);
    connection = await connect(url, flags.cluster === true, client);
    const outcome = await run({ connection, prefix: flags.prefix ?? 'tg', keyPrefix: flags['key-prefix'] ?? 'tgk' });
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
