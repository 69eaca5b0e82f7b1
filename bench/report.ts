/**
 * Turns a run into bench/results/latest.md (tables, ratios, targets) and latest.svg (a bar
 * chart of ops/s per scenario and concurrency, written by hand: no chart library).
 */
import type { Results, Row, Section } from "./results.ts";

// ---------- lookups ----------

function rowsOf(results: Results, section: Section, key: string, client: string, c: number): Row[] {
  return results.rows.filter((r) => r.section === section && r.key === key && r.client === client && r.m.concurrency === c);
}

/** Mean ops/s over the runs of one cell (key rows run twice); undefined when it did not run. */
function meanOps(rows: Row[]): number | undefined {
  return rows.length === 0 ? undefined : rows.reduce((sum, r) => sum + r.m.opsPerSec, 0) / rows.length;
}

function meanP50(rows: Row[]): number | undefined {
  return rows.length === 0 ? undefined : rows.reduce((sum, r) => sum + r.m.p50Ms, 0) / rows.length;
}

function clients(results: Results, section: Section): string[] {
  return [...new Set(results.rows.filter((r) => r.section === section).map((r) => r.client))];
}

function keysIn(results: Results, section: Section): Array<{ key: string; name: string }> {
  const seen = new Map<string, string>();
  for (const r of results.rows) if (r.section === section && !seen.has(r.key)) seen.set(r.key, r.name);
  return [...seen].map(([key, name]) => ({ key, name }));
}

const topConcurrency = (results: Results) => Math.max(...results.config.concurrency);

// ---------- formatting ----------

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => (n < 10 ? n.toFixed(3) : n.toFixed(1));
const x = (n: number | undefined) => (n === undefined || !Number.isFinite(n) ? "–" : `${n.toFixed(2)}×`);
const div = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : a / b);

function table(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

// ---------- targets ----------

interface Target {
  goal: string;
  measured: string;
  met: boolean | undefined;
}

export function targets(results: Results): Target[] {
  const top = topConcurrency(results);
  const out: Target[] = [];
  const versus = (goal: string, section: Section, key: string, base: string, min: number, client: string, c: number) => {
    const value = div(meanOps(rowsOf(results, section, key, client, c)), meanOps(rowsOf(results, section, base, client, c)));
    out.push({ goal, measured: value === undefined ? "did not run" : `${value.toFixed(2)}× (${client}, c=${c})`, met: value === undefined ? undefined : value >= min });
  };
  for (const client of clients(results, "requests")) {
    versus("admit ≥ 0.95× floor", "requests", "admit", "floor", 0.95, client, top);
    versus("admit ≥ 1.25× rate-limiter-flexible", "requests", "admit", "rlf", 1.25, client, top);
    versus("admit + pre-check ≥ 0.9× floor", "requests", "precheck", "floor", 0.9, client, top);
  }
  const exampleRan = results.rows.some((r) => r.section === "http" && r.key === "exampleFree");
  const freeKey = exampleRan ? "exampleFree" : "admit";
  if (results.rows.some((r) => r.section === "http")) {
    versus(
      exampleRan ? "free HTTP endpoint ≥ 0.9× bare Express" : "free HTTP endpoint ≥ 0.9× bare Express (stand-in: tollgate admit middleware; the example server did not run)",
      "http", freeKey, "bare", 0.9, "node-redis", top,
    );
  }
  for (const client of clients(results, "jobs")) {
    for (const c of [Math.min(...results.config.concurrency), top]) {
      const value = div(meanP50(rowsOf(results, "jobs", "reserve5000", client, c)), meanP50(rowsOf(results, "jobs", "reserve1", client, c)));
      out.push({ goal: "create N=5,000 p50 ≤ 1.2× N=1", measured: value === undefined ? "did not run" : `${value.toFixed(2)}× (${client}, c=${c})`, met: value === undefined ? undefined : value <= 1.2 });
    }
  }
  if (results.memory) {
    const bytes = results.memory.perAccountJournalOff;
    out.push({ goal: "≤ 256 bytes per idle account, journal off", measured: `${bytes.toFixed(0)} B`, met: bytes <= 256 });
  }
  return out;
}

const verdict = (met: boolean | undefined) => (met === undefined ? "–" : met ? "met" : "**missed**");

// ---------- markdown ----------

export function markdown(results: Results): string {
  const { machine, config } = results;
  const parts: string[] = [
    "# tollgate benchmark: latest run",
    "",
    `Command: \`npm run bench\` · ${results.startedAt} · ${machine.cpu}, ${machine.cores} cores · Node ${machine.node} · Redis ${machine.redis} (private redis-server, no persistence, 127.0.0.1) · ${machine.clients}`,
    "",
    `- Each cell: ${config.warmupSeconds} s warm-up, then ${config.seconds} s measured, closed loop: c loops each awaiting one operation before the next, ` +
      "operations spread round-robin over 1,000 accounts.",
    "- All cells ran in one process against one Redis, and ratios compare cells of the same run. Rows marked #2 repeat a key row later in the " +
      "same sequence: the difference between #1 and #2 is this machine's noise.",
    "- Where the time goes: *script µs/call* is Redis's time inside EVAL/EVALSHA (INFO commandstats); *Redis CPU µs/op* is all of " +
      "redis-server's CPU (INFO cpu: scripts, parsing, network I/O); *client CPU µs/op* is this process's CPU (the Redis client, tollgate, the loop, GC).",
    "- With one connection and a closed loop, client and server mostly take turns, so ops/s ≈ 1 / (client + Redis µs per op): a script's Redis time counts in full.",
    "- rate-limiter-flexible sends EVAL with its script text on node-redis and EVALSHA (defineCommand) on ioredis. " +
      "tollgate runs with its defaults (Redis TIME clock, journal on).",
    "",
    "## Targets",
    "",
    table(["target", "measured", ""], targets(results).map((t) => [t.goal, t.measured, verdict(t.met)])),
  ];

  for (const section of ["requests", "jobs"] as const) {
    const title = section === "requests" ? "Per-request calls" : "Bulk jobs";
    for (const client of clients(results, section)) {
      parts.push("", `## ${title}, ${client}`, "");
      const lines: string[][] = [];
      for (const c of config.concurrency) {
        const floor = meanOps(rowsOf(results, section, "floor", client, c));
        const rlf = meanOps(rowsOf(results, section, "rlf", client, c));
        for (const { key, name } of keysIn(results, section)) {
          for (const r of rowsOf(results, section, key, client, c)) {
            const row = [
              `${name}${r.run > 1 ? ` #${r.run}` : ""}`,
              String(c),
              int(r.m.opsPerSec),
              ms(r.m.p50Ms),
              ms(r.m.p99Ms),
              r.redisUsPerCall === undefined ? "–" : r.redisUsPerCall.toFixed(1),
              r.callsPerOp === undefined ? "–" : r.callsPerOp.toFixed(2),
              r.m.cpuUsPerOp.toFixed(1),
              r.redisCpuUsPerOp === undefined ? "–" : r.redisCpuUsPerOp.toFixed(1),
            ];
            if (section === "requests") row.push(x(div(r.m.opsPerSec, floor)), x(div(r.m.opsPerSec, rlf)));
            lines.push(row);
          }
        }
      }
      const head = ["scenario", "c", "ops/s", "p50 ms", "p99 ms", "script µs/call", "calls/op", "client CPU µs/op", "Redis CPU µs/op"];
      if (section === "requests") head.push("× floor", "× rate-limiter-flexible");
      parts.push(table(head, lines));
    }
  }

  if (results.rows.some((r) => r.section === "http")) {
    parts.push(
      "",
      "## HTTP through Express, node-redis",
      "",
      "autocannon in a worker thread of this process, Express on the main thread, redis-server beside them: three busy threads on this machine's cores. " +
        "Each connection sends its own account's x-api-key. autocannon records latency in whole ms. " +
        "Server busy µs/req is the Express thread's event-loop busy time per request.",
      "",
    );
    const lines: string[][] = [];
    for (const c of config.concurrency) {
      const bare = meanOps(rowsOf(results, "http", "bare", "node-redis", c));
      const erl = meanOps(rowsOf(results, "http", "erl", "node-redis", c));
      for (const { key, name } of keysIn(results, "http")) {
        for (const r of rowsOf(results, "http", key, "node-redis", c)) {
          const bytes = r.bytesPerResponse === undefined ? "–" : int(r.bytesPerResponse);
          const whole = (v: number) => (v === 0 ? "<1" : String(v)); // autocannon: whole ms
          lines.push([`${name}${r.run > 1 ? ` #${r.run}` : ""}`, String(c), int(r.m.opsPerSec), whole(r.m.p50Ms), whole(r.m.p99Ms), r.m.cpuUsPerOp.toFixed(1), bytes, x(div(r.m.opsPerSec, bare)), x(div(r.m.opsPerSec, erl))]);
        }
      }
    }
    parts.push(table(["scenario", "connections", "req/s", "p50 ms", "p99 ms", "server busy µs/req", "bytes/response", "× bare Express", "× express-rate-limit"], lines));
  }

  if (results.memory) {
    const m = results.memory;
    parts.push(
      "",
      `## Redis memory (INFO memory used_memory delta, ${int(m.accounts)} accounts on the default "pro" plan)`,
      "",
      table(["what", "bytes"], [
        ["per idle account, journal off", m.perAccountJournalOff.toFixed(0)],
        ["per idle account, journal on (stream with the cycle's opening grant)", m.perAccountJournalOn.toFixed(0)],
        [`per journal entry (${m.entriesPerAccount} charges on each of ${int(m.entryAccounts)} accounts)`, m.perJournalEntry.toFixed(0)],
      ]),
    );
  }

  if (results.gaps.length > 0) parts.push("", "## Not measured", "", ...results.gaps.map((g) => `- ${g}`));
  return `${parts.join("\n")}\n`;
}

// ---------- console ----------

export function summary(results: Results): string {
  const lines = ["Targets:"];
  for (const t of targets(results)) lines.push(`  ${(t.met === undefined ? "-" : t.met ? "met" : "MISSED").padEnd(7)} ${t.goal}: ${t.measured}`);
  const top = topConcurrency(results);
  lines.push(`ops/s at c=${top} (mean of runs):`);
  for (const section of ["requests", "jobs", "http"] as const) {
    for (const client of clients(results, section)) {
      for (const { key, name } of keysIn(results, section)) {
        const ops = meanOps(rowsOf(results, section, key, client, top));
        if (ops !== undefined) lines.push(`  ${`${section === "http" ? "http" : client}: ${name}`.padEnd(62)} ${int(ops).padStart(8)}`);
      }
    }
  }
  for (const gap of results.gaps) lines.push(`Not measured: ${gap}`);
  return lines.join("\n");
}

// ---------- svg ----------

const COLORS = ["#9ecae1", "#4292c6", "#08306b", "#fd8d3c", "#a63603"];
const escape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
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
  body.push(`<text x="20" y="${y}" font-size="11" fill="#555">${escape(`${results.machine.cpu}, ${results.machine.cores} cores · Node ${results.machine.node} · Redis ${results.machine.redis} · ${results.startedAt} · each panel has its own scale`)}</text>`);
  y += 16;
  concurrency.forEach((c, i) => {
    const lx = 20 + i * 130;
    body.push(`<rect x="${lx}" y="${y - 9}" width="12" height="10" fill="${COLORS[i % COLORS.length]}"/><text x="${lx + 16}" y="${y}" font-size="11">c = ${c}</text>`);
  });
  y += 14;

  const panels: Array<{ title: string; section: Section; client: string }> = [];
  for (const section of ["requests", "jobs"] as const) {
    for (const client of clients(results, section)) {
      panels.push({ title: `${section === "requests" ? "Per-request calls" : "Bulk jobs"}, ${client} (ops/s)`, section, client });
    }
  }
  if (results.rows.some((r) => r.section === "http")) panels.push({ title: "HTTP through Express, node-redis (requests/s, connections = c)", section: "http", client: "node-redis" });

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
        body.push(`<rect x="${labelW}" y="${by}" width="${w.toFixed(1)}" height="${barH}" fill="${COLORS[i % COLORS.length]}"><title>${escape(`${name}, c=${c}: ${int(v)} ops/s`)}</title></rect>`);
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
    "</svg>",
    "",
  ].join("\n");
}
