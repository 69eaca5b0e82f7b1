/**
 * The closed-loop runner every Redis scenario goes through: `concurrency` loops, each awaiting
 * one operation before starting the next, first for a warm-up that is thrown away, then for a
 * fixed measured time. Latencies go into a log-bucketed histogram (1% wide buckets), so memory
 * stays constant however many operations a cell runs.
 */

export interface MeasureOptions {
  concurrency: number;
  /** Measured time. */
  seconds: number;
  /** Time run first and thrown away (JIT, connection buffers, script cache). Default 0. */
  warmupSeconds?: number;
  /** Runs between warm-up and measurement, e.g. CONFIG RESETSTAT. */
  beforeMeasure?: () => Promise<void>;
}

export interface Measurement {
  concurrency: number;
  ops: number;
  seconds: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** CPU time of this process (user + system, all threads) per operation, in µs. */
  cpuUsPerOp: number;
}

/** One operation; `i` counts operations across all loops (use it to spread keys). */
export type Operation = (i: number) => Promise<unknown>;

export async function measure(op: Operation, options: MeasureOptions): Promise<Measurement> {
  const { concurrency, seconds, warmupSeconds = 0 } = options;
  if (!(concurrency >= 1) || !(seconds > 0)) throw new Error('measure needs concurrency >= 1 and seconds > 0');
  const counter = { next: 0 };
  if (warmupSeconds > 0) await runLoops(op, concurrency, warmupSeconds, counter, new Histogram());
  await options.beforeMeasure?.();
  const histogram = new Histogram();
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await runLoops(op, concurrency, seconds, counter, histogram);
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  return {
    concurrency,
    ops: histogram.count,
    seconds: elapsed,
    opsPerSec: histogram.count / elapsed,
    p50Ms: histogram.percentile(50) / 1e6,
    p99Ms: histogram.percentile(99) / 1e6,
    maxMs: histogram.max / 1e6,
    cpuUsPerOp: (used.user + used.system) / histogram.count,
  };
}

async function runLoops(op: Operation, concurrency: number, seconds: number, counter: { next: number }, histogram: Histogram): Promise<void> {
  const deadline = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  const loop = async () => {
    for (let now = process.hrtime.bigint(); now < deadline; ) {
      await op(counter.next++);
      const end = process.hrtime.bigint();
      histogram.record(Number(end - now));
      now = end;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
}

/** Latencies in ns; bucket k holds values near e^(k/100), so a percentile is within ~0.5%. */
export class Histogram {
  private readonly buckets = new Float64Array(2600); // e^26 ns is about 2 days
  count = 0;
  max = 0;

  record(ns: number): void {
    const k = Math.min(this.buckets.length - 1, Math.max(0, Math.round(Math.log(Math.max(ns, 1)) * 100)));
    this.buckets[k]!++;
    this.count++;
    if (ns > this.max) this.max = ns;
  }

  /** The value at percentile p (0-100) in ns; 0 when empty. */
  percentile(p: number): number {
    if (this.count === 0) return 0;
    const rank = Math.ceil((p / 100) * this.count);
    let seen = 0;
    for (let k = 0; k < this.buckets.length; k++) {
      seen += this.buckets[k]!;
      if (seen >= rank) return Math.min(Math.exp(k / 100), this.max);
    }
    return this.max;
  }
}
