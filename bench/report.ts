/**
 * Turns a run into bench/results/latest.md (the targets, tables, memory) and latest.svg (a bar
 * chart of ops/s per scenario and concurrency, written by hand: no chart library).
 */
import { BASELINE_SOURCE } from './baseline.ts';
import type { Results, Row, Section } from './results.ts';
import { noisy, usPerCall } from './results.ts';
import { clientsIn, meanBusy, meanOps, pooledUsPerCall, rowsOf, targets, type Target } from './targets.ts';

// ---------- lookups ----------

function keysIn(results: Results, section: Section): Array<{ key: string; name: string }> {
  const seen = new Map<string, string>();
  for (const r of results.rows) if (r.section === section && !seen.has(r.key)) seen.set(r.key, r.name);
  return [...seen].map(([key, name]) => ({ key, name }));
}

const topConcurrency = (results: Results) => Math.max(...results.config.concurrency);

// ---------- formatting ----------

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => (n < 10 ? n.toFixed(3) : n.toFixed(1));
const x = (n: number | undefined) => (n === undefined || !Number.isFinite(n) ? '–' : `${n.toFixed(2)}×`);
const us = (n: number | undefined) => (n === undefined ? '–' : n.toFixed(1));
const div = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? undefined : a / b);

function table(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

const label = (r: Row) => `${r.name}${r.run > 1 ? ` #${r.run}` : ''}`;
const verdict = (met: boolean | undefined) => (met === undefined ? '–' : met ? 'met' : '**missed**');
const amount = (t: Pick<Target, 'unit'>, v: number | undefined) =>
  v === undefined ? '–' : t.unit === 'B' ? `${v.toFixed(0)} B` : t.unit === 'µs' ? `${v >= 0 ? '+' : ''}${v.toFixed(2)} µs` : `${v.toFixed(2)}×`;
const before = (t: Target) => (t.before ? `${amount(t, t.before.value)}${t.before.note ? ` (${t.before.note})` : ''}` : '–');

// ---------- markdown ----------

export function markdown(results: Results): string {
  const { machine, config } = results;
  const parts: string[] = [
    '# tollgate benchmark: latest run',
    '',
    `Command: \`${results.command}\` · ${results.startedAt} · ${machine.cpu}, ${machine.cores} cores · Node ${machine.node} · Redis ${machine.redis} (private redis-server, no persistence, 127.0.0.1) · ${machine.clients}`,
    '',
    `- Each cell: ${config.warmupSeconds} s warm-up, then ${config.seconds} s measured, closed loop: c loops each awaiting one operation before the next, ` +
      'operations spread round-robin over 1,000 subjects (accounts, their API keys, or policy subjects ip:…).',
    ...(results.load
      ? [
          `- Load average (1 min) ${results.load.start.toFixed(2)} when the run started, ${results.load.end.toFixed(2)} when it ended, on ${machine.cores} cores: other work on the machine shows in every figure.`,
        ]
      : []),
    '- All cells ran in one process against one Redis, and ratios compare cells of the same run. Rows marked #2 repeat a key row later in the ' +
      "same sequence: the difference between #1 and #2 is this machine's noise.",
    "- Where the time goes: *script µs/call* is Redis's time inside FCALL/EVALSHA/EVAL per script call (INFO commandstats, reset per cell; it includes the " +
      "script's own commands), *script µs/op* the same per operation (a hold opening runs two scripts); *Redis CPU µs/op* is all of redis-server's " +
      "CPU (INFO cpu: scripts, parsing, network I/O); *client CPU µs/op* is this process's CPU (the Redis client, tollgate, the loop, GC). " +
      "commandstats times scripts by the wall clock: a cell whose script time per op exceeds Redis's CPU per op lost the core to another " +
      'process mid-script, and is marked ⚠ (its script µs are inflated; run again at a quiet moment).',
    "- The floor, tollgate's scripts by raw EVALSHA and 0.1's reserveJob are sent the way tollgate sends its own (fromNodeRedis / fromIoredis), so a " +
      "raw row differs from the library's row only by the library's own code. rate-limiter-flexible sends EVAL with its script text on node-redis and " +
      'EVALSHA (defineCommand) on ioredis. tollgate runs with its defaults (scripts as functions by FCALL, Redis TIME clock, journal and per-day history on, no deny cache).',
    '',
    '## Targets',
    '',
    'Ratios within this run, for each client where the issue names both. Redis µs per call is pooled over the cells at c = 16 and 64 ' +
      "(all their script time over all their calls); ops/s and p50 are the mean of a cell's runs. " +
      `*0.1* is the same ratio in 0.1's run (${BASELINE_SOURCE}), where 0.1 had the measure.`,
    '',
    table(
      ['target', 'measured', 'ratio', '0.1', ''],
      targets(results).map((t) => [t.goal, t.measured, amount(t, t.value), before(t), verdict(t.met)]),
    ),
  ];

  if (results.rows.some((r) => r.section === 'inprocess')) {
    parts.push(
      '',
      "## In this process's memory",
      '',
      "No Redis: a tollgate made with `memory: true` and rate-limiter-flexible's RateLimiterMemory, over the same 1,000 subjects.",
      '',
    );
    const lines: string[][] = [];
    for (const c of config.concurrency) {
      const peer = meanOps(rowsOf(results, 'inprocess', 'rlfMemory', 'memory', c));
      const redis = meanOps(rowsOf(results, 'requests', 'admit', 'node-redis', c));
      for (const { key } of keysIn(results, 'inprocess')) {
        for (const r of rowsOf(results, 'inprocess', key, 'memory', c)) {
          lines.push([
            label(r),
            String(c),
            int(r.m.opsPerSec),
            ms(r.m.p50Ms),
            ms(r.m.p99Ms),
            r.m.cpuUsPerOp.toFixed(2),
            x(div(r.m.opsPerSec, peer)),
            x(div(r.m.opsPerSec, redis)),
          ]);
        }
      }
    }
    parts.push(table(['scenario', 'c', 'ops/s', 'p50 ms', 'p99 ms', 'CPU µs/op', 'ops/s × RateLimiterMemory', 'ops/s × Redis admit (node-redis)'], lines));
  }

  const titles = { requests: 'Per-request calls', holds: 'Holds', grants: 'Credit grants on the hot path' } as const;
  for (const section of ['requests', 'holds', 'grants'] as const) {
    const title = titles[section];
    for (const client of clientsIn(results, section)) {
      parts.push('', `## ${title}, ${client}`, '');
      if (section === 'grants') {
        parts.push(
          "charge 1 and admit + pre-check by raw FCALL, the library's own command (a fresh operation id per charge), on accounts without grants and " +
            'on accounts holding 1, 16 or 64 live grants of priority 10, so the first source in the spend order (a grant) pays. *Before grants* is ' +
            'the same command sent to charge and admit as they were before grants (bench/fixtures/beforeGrants.ts), loaded beside them.',
          '',
        );
      }
      if (section === 'holds') {
        parts.push(
          'tg.holds.open runs two scripts per opening (openHold.lua and the sweep index mark, side by side); openHold.lua by raw EVALSHA is the ' +
            'first alone, with a fresh hold id each call. Each cell starts from an emptied Redis with fresh accounts.',
          '',
        );
      }
      const lines: string[][] = [];
      for (const c of config.concurrency) {
        const floorUs = pooledUsPerCall(rowsOf(results, section, 'floor', client, c));
        const reserveUs = pooledUsPerCall(rowsOf(results, section, 'reserve01', client, c));
        const rlf = meanOps(rowsOf(results, section, 'rlf', client, c));
        const beforeUs = (key: string) => pooledUsPerCall(rowsOf(results, section, key.startsWith('charge') ? 'chargeBefore' : 'admitBefore', client, c));
        const noneUs = (key: string) => pooledUsPerCall(rowsOf(results, section, key.startsWith('charge') ? 'charge0' : 'admit0', client, c));
        for (const { key } of keysIn(results, section)) {
          for (const r of rowsOf(results, section, key, client, c)) {
            const perCall = usPerCall(r);
            const row = [
              `${label(r)}${noisy(r) ? ' ⚠' : ''}`,
              String(c),
              int(r.m.opsPerSec),
              ms(r.m.p50Ms),
              ms(r.m.p99Ms),
              us(perCall),
              r.scriptCalls === undefined ? '–' : (r.scriptCalls / r.m.ops).toFixed(2),
              r.scriptUsec === undefined ? '–' : us(r.scriptUsec / r.m.ops),
              r.m.cpuUsPerOp.toFixed(1),
              us(r.redisCpuUsPerOp),
            ];
            if (section === 'requests') row.push(x(div(perCall, floorUs)), x(div(r.m.opsPerSec, rlf)));
            else if (section === 'grants') {
              const none = noneUs(r.key);
              row.push(
                x(div(perCall, beforeUs(r.key))),
                perCall === undefined || none === undefined ? '–' : `${perCall >= none ? '+' : ''}${(perCall - none).toFixed(1)}`,
              );
            } else row.push(x(div(r.scriptUsec === undefined ? undefined : r.scriptUsec / r.m.ops, reserveUs)));
            lines.push(row);
          }
        }
      }
      const head = ['scenario', 'c', 'ops/s', 'p50 ms', 'p99 ms', 'script µs/call', 'scripts/op', 'script µs/op', 'client CPU µs/op', 'Redis CPU µs/op'];
      if (section === 'requests') head.push('script µs × floor', 'ops/s × rate-limiter-flexible');
      else if (section === 'grants') head.push('script µs × before grants', 'script µs − no grants (cell mean)');
      else head.push('script µs/op × 0.1 reserveJob');
      parts.push(table(head, lines));
    }
  }

  if (results.rows.some((r) => r.section === 'http')) {
    parts.push(
      '',
      '## HTTP through Express, node-redis',
      '',
      "autocannon in a worker thread of this process, Express on the main thread, redis-server beside them: three busy threads on this machine's cores. " +
        "Each connection sends its own subject's x-api-key: the account id for express-rate-limit and the admit middleware, an API key for " +
        "keys.verify and the example server. autocannon records latency in whole ms. *Server busy µs/req* is the Express thread's event-loop busy " +
        'time per request; *scripts/req* the FCALL/EVALSHA/EVAL calls per request (INFO commandstats).',
      '',
    );
    const lines: string[][] = [];
    for (const c of config.concurrency) {
      const bare = meanOps(rowsOf(results, 'http', 'bare', 'node-redis', c));
      const erl = meanBusy(rowsOf(results, 'http', 'erl', 'node-redis', c));
      for (const { key } of keysIn(results, 'http')) {
        for (const r of rowsOf(results, 'http', key, 'node-redis', c)) {
          const bytes = r.bytesPerResponse === undefined ? '–' : int(r.bytesPerResponse);
          const whole = (v: number) => (v === 0 ? '<1' : String(v)); // autocannon: whole ms
          const scripts = r.scriptCalls === undefined ? '–' : (r.scriptCalls / r.m.ops).toFixed(2);
          lines.push([
            label(r),
            String(c),
            int(r.m.opsPerSec),
            whole(r.m.p50Ms),
            whole(r.m.p99Ms),
            r.m.cpuUsPerOp.toFixed(1),
            scripts,
            bytes,
            x(div(r.m.opsPerSec, bare)),
            x(div(r.m.cpuUsPerOp, erl)),
          ]);
        }
      }
    }
    parts.push(
      table(
        [
          'scenario',
          'connections',
          'req/s',
          'p50 ms',
          'p99 ms',
          'server busy µs/req',
          'scripts/req',
          'bytes/response',
          'req/s × bare Express',
          'busy µs × express-rate-limit',
        ],
        lines,
      ),
    );
  }

  if (results.memory) {
    const m = results.memory;
    parts.push(
      '',
      `## Redis memory (INFO memory used_memory delta; tollgate's defaults, the default "pro" plan)`,
      '',
      table(
        ['what', 'bytes'],
        [
          [`per idle account without keys (${int(m.accounts)} accounts)`, m.perAccount.toFixed(0)],
          [`first API key of an account (${int(m.accounts)} keys)`, m.perFirstKey.toFixed(0)],
          [`second API key of an account (${int(m.accounts)} keys)`, m.perSecondKey.toFixed(0)],
          [
            `per charge: journal entry, per-day history, recent ids (${m.chargesPerAccount} charges on each of ${int(m.chargeAccounts)} accounts)`,
            m.perCharge.toFixed(0),
          ],
          ...(m.perGrant === undefined
            ? []
            : [
                [`account hash of an idle account without grants or keys (MEMORY USAGE, mean of ${int(m.grantAccounts!)})`, m.idleAccountHash!.toFixed(0)],
                [`first live grant, in the account hash (order, sum, next roll and its two fields)`, m.perFirstGrant!.toFixed(0)],
                [`each further live grant, in the account hash (grants 2 to ${m.grantsPerAccount})`, m.perGrant.toFixed(0)],
              ]),
        ],
      ),
    );
  }

  if (results.events && results.events.length > 0) {
    parts.push(
      '',
      '## Events delivered by one consumer (events.consume, default batch size, a handler that does nothing)',
      '',
      table(
        ['client', 'events', 'subjects', 'seconds', 'events/s', 'scripts/event'],
        results.events.map((e) => [e.client, int(e.events), int(e.subjects), e.seconds.toFixed(2), int(e.perSecond), e.scriptsPerEvent.toFixed(2)]),
      ),
    );
  }

  if (results.gaps.length > 0) parts.push('', '## Not measured', '', ...results.gaps.map((g) => `- ${g}`));
  return `${parts.join('\n')}\n`;
}

// ---------- console ----------

export function summary(results: Results): string {
  const lines = ['Targets (ratios within this run; 0.1 in brackets where it had the measure):'];
  if (results.load)
    lines.unshift(
      `Load average (1 min): ${results.load.start.toFixed(2)} at the start, ${results.load.end.toFixed(2)} at the end (${results.machine.cores} cores).`,
    );
  for (const t of targets(results)) {
    const was = t.before ? ` [0.1: ${amount(t, t.before.value)}]` : '';
    lines.push(`  ${(t.met === undefined ? '-' : t.met ? 'met' : 'MISSED').padEnd(7)} ${t.goal}: ${amount(t, t.value)}, ${t.measured}${was}`);
  }
  const top = topConcurrency(results);
  lines.push(`ops/s at c=${top} (mean of runs):`);
  for (const section of ['requests', 'holds', 'grants', 'http', 'inprocess'] as const) {
    for (const client of clientsIn(results, section)) {
      for (const { key, name } of keysIn(results, section)) {
        const ops = meanOps(rowsOf(results, section, key, client, top));
        if (ops !== undefined) lines.push(`  ${`${section === 'http' ? 'http' : client}: ${name}`.padEnd(62)} ${int(ops).padStart(8)}`);
      }
    }
  }
  for (const gap of results.gaps) lines.push(`Not measured: ${gap}`);
  return lines.join('\n');
}

// ---------- svg ----------

const COLORS = ['#9ecae1', '#4292c6', '#08306b', '#fd8d3c', '#a63603'];
const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const short = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : n.toFixed(0));

export function svg(results: Results): string {
  const width = 960;
  const labelW = 330;
  const barMax = width - labelW - 90;
  const barH = 9;
  const concurrency = results.config.concurrency;
  const body: string[] = [];
  let y = 20;

  body.push(`<text x="20" y="${y}" font-size="16" font-weight="bold">tollgate benchmark: ops/s per scenario and concurrency (mean of runs)</text>`);
  y += 18;
  body.push(
    `<text x="20" y="${y}" font-size="11" fill="#555">${escape(`${results.machine.cpu}, ${results.machine.cores} cores · Node ${results.machine.node} · Redis ${results.machine.redis} · ${results.startedAt} · each panel has its own scale`)}</text>`,
  );
  y += 16;
  concurrency.forEach((c, i) => {
    const lx = 20 + i * 130;
    body.push(
      `<rect x="${lx}" y="${y - 9}" width="12" height="10" fill="${COLORS[i % COLORS.length]}"/><text x="${lx + 16}" y="${y}" font-size="11">c = ${c}</text>`,
    );
  });
  y += 14;

  const panels: Array<{ title: string; section: Section; client: string }> = [];
  for (const section of ['requests', 'holds'] as const) {
    for (const client of clientsIn(results, section)) {
      panels.push({ title: `${section === 'requests' ? 'Per-request calls' : 'Holds'}, ${client} (ops/s)`, section, client });
    }
  }
  if (results.rows.some((r) => r.section === 'http'))
    panels.push({ title: 'HTTP through Express, node-redis (requests/s, connections = c)', section: 'http', client: 'node-redis' });

  for (const panel of panels) {
    const keys = keysIn(results, panel.section);
    const value = (key: string, c: number) => meanOps(rowsOf(results, panel.section, key, panel.client, c)) ?? 0;
    const max = Math.max(1, ...keys.flatMap(({ key }) => concurrency.map((c) => value(key, c))));
    y += 22;
    body.push(`<text x="20" y="${y}" font-size="13" font-weight="bold">${escape(panel.title)}</text>`);
    y += 8;
    for (const { key, name } of keys) {
      const groupH = concurrency.length * (barH + 2);
      body.push(`<text x="${labelW - 8}" y="${y + groupH / 2 + 4}" font-size="11" text-anchor="end">${escape(name)}</text>`);
      concurrency.forEach((c, i) => {
        const v = value(key, c);
        const w = Math.max(1, (v / max) * barMax);
        const by = y + i * (barH + 2);
        body.push(
          `<rect x="${labelW}" y="${by}" width="${w.toFixed(1)}" height="${barH}" fill="${COLORS[i % COLORS.length]}"><title>${escape(`${name}, c=${c}: ${int(v)} ops/s`)}</title></rect>`,
        );
        body.push(`<text x="${(labelW + w + 4).toFixed(1)}" y="${by + barH - 1}" font-size="9" fill="#333">${short(v)}</text>`);
      });
      y += groupH + 8;
    }
  }
  y += 10;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}" font-family="Helvetica, Arial, sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}
