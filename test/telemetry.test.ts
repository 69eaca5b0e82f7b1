// OpenTelemetry: a span per quota-store call (script, outcome, duration) and counters
// of admits, denials, charges and store failures, through @opentelemetry/api's global tracer
// and meter by default; off with telemetry: false.
import { metrics, trace, type Meter, type MeterProvider, type Span, type Tracer, type TracerProvider } from '@opentelemetry/api';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, fromIoredis, type Tollgate } from '../src/index.ts';
import { InvalidInputError, StoreUnavailableError } from '../src/errors.ts';
import { TELEMETRY_NAMES } from '../src/telemetry.ts';
import { connectIoredis, uniquePrefix } from './helpers/redis.ts';
import { accountId, ManualClock } from './helpers/tollgate.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';

interface Recorded {
  name: string;
  kind: number | undefined;
  attributes: Record<string, unknown>;
  status?: { code: number; message?: string };
  exceptions: unknown[];
  ended: boolean;
  startedAt: number;
  endedAt?: number;
}

/** A tracer and a meter that keep what they are given, as an SDK's exporters would see it. */
class Recorder {
  spans: Recorded[] = [];
  counts: Array<{ counter: string; value: number; attributes: Record<string, unknown> }> = [];

  readonly tracer = {
    startSpan: (name: string, options: { kind?: number; attributes?: Record<string, unknown> } = {}) => {
      const span: Recorded = { name, kind: options.kind, attributes: { ...options.attributes }, exceptions: [], ended: false, startedAt: performance.now() };
      this.spans.push(span);
      const handle = {
        setAttribute: (key: string, value: unknown) => ((span.attributes[key] = value), handle),
        setStatus: (status: { code: number; message?: string }) => ((span.status = status), handle),
        recordException: (error: unknown) => void span.exceptions.push(error),
        end: () => void Object.assign(span, { ended: true, endedAt: performance.now() }),
      };
      return handle as unknown as Span;
    },
  } as unknown as Tracer;

  readonly meter = {
    createCounter: (counter: string) => ({
      add: (value: number, attributes: Record<string, unknown> = {}) => void this.counts.push({ counter, value, attributes }),
    }),
  } as unknown as Meter;

  total(counter: string, match: Record<string, unknown> = {}): number {
    return this.counts
      .filter((c) => c.counter === counter && Object.entries(match).every(([k, v]) => c.attributes[k] === v))
      .reduce((sum, c) => sum + c.value, 0);
  }

  clear(): void {
    this.spans = [];
    this.counts = [];
  }
}

describe('telemetry', () => {
  let io: Redis;
  const recorder = new Recorder();
  const clock = new ManualClock();
  let tg: Tollgate;

  beforeAll(async () => {
    io = await connectIoredis();
    // The host's SDK, registered before createTollgate as OpenTelemetry asks.
    trace.setGlobalTracerProvider({ getTracer: () => recorder.tracer } as TracerProvider);
    metrics.setGlobalMeterProvider({ getMeter: () => recorder.meter } as MeterProvider);
    tg = createTollgate({ plans: EXAMPLE_PLANS, redis: fromIoredis(io), prefix: uniquePrefix('telemetry'), clock: clock.fn });
  });
  afterAll(async () => {
    trace.disable();
    metrics.disable();
    await io.quit();
  });

  it('by default: a CLIENT span per store call named after its script, with the outcome, ended when the call is', async () => {
    const subject = accountId('otel');
    await tg.accounts.create(subject, { plan: 'free' });
    recorder.clear();
    await tg.limits.admit(subject);
    expect(recorder.spans).toHaveLength(1);
    const [span] = recorder.spans;
    expect(span).toMatchObject({
      name: 'tollgate admit',
      kind: 2,
      ended: true,
      attributes: { 'db.system.name': 'redis', 'tollgate.script': 'admit', 'tollgate.outcome': 'ok' },
    });
    expect(span!.endedAt! - span!.startedAt).toBeGreaterThanOrEqual(0);
    expect(span!.status).toBeUndefined();
  });

  it('counts admits and denials by surface, and leaves peeks out', async () => {
    const subject = accountId('otel');
    await tg.accounts.create(subject, { plan: 'free' });
    recorder.clear();
    for (let i = 0; i < 3; i++) await tg.limits.admit(subject, { surface: 'web', cost: 10 });
    await tg.limits.admit(subject, { surface: 'web', cost: 10 });
    await tg.limits.admit(subject, { surface: 'web', cost: 31 });
    await tg.limits.peek(subject, { surface: 'web' });
    expect(recorder.total(TELEMETRY_NAMES.admits, { 'tollgate.surface': 'web' })).toBe(3);
    expect(recorder.total(TELEMETRY_NAMES.denials, { 'tollgate.reason': 'rate_limited' })).toBe(1);
    expect(recorder.total(TELEMETRY_NAMES.denials, { 'tollgate.reason': 'cost_exceeds_limit' })).toBe(1);
    expect(recorder.spans.at(-2)!.attributes['tollgate.outcome']).toBe('cost_exceeds_limit');
  });

  it('counts the requests a shadow window would have denied, by surface and window', async () => {
    const shadowed = createTollgate({
      plans: EXAMPLE_PLANS,
      redis: fromIoredis(io),
      prefix: uniquePrefix('telemetry-shadow'),
      clock: clock.fn,
      policies: {
        trial: {
          api: [
            { limit: 100, windowMs: 60_000 },
            { limit: 2, windowMs: 10_000, shadow: true },
          ],
        },
      },
    });
    recorder.clear();
    for (let i = 0; i < 5; i++) expect((await shadowed.limits.admit('ip:203.0.113.9', { policy: 'trial' })).allowed).toBe(true);
    expect(recorder.total(TELEMETRY_NAMES.shadowDenials, { 'tollgate.surface': 'api', 'tollgate.window_ms': 10_000 })).toBe(3);
    expect(recorder.total(TELEMETRY_NAMES.admits)).toBe(5);
    expect(recorder.total(TELEMETRY_NAMES.denials)).toBe(0);
  });

  it('counts a key verified with the admit as an admit, and a refused key as neither', async () => {
    const subject = accountId('otel');
    await tg.accounts.create(subject, { plan: 'free' });
    const { key } = await tg.keys.issue(subject);
    recorder.clear();
    await tg.keys.verify(key);
    await tg.keys.verify(key.slice(0, -1) + (key.endsWith('0') ? '1' : '0'));
    expect(recorder.total(TELEMETRY_NAMES.admits, { 'tollgate.script': 'verifyKey' })).toBe(1);
    expect(recorder.total(TELEMETRY_NAMES.denials)).toBe(0);
    expect(recorder.spans.map((s) => s.attributes['tollgate.outcome'])).toEqual(['ok', 'key_refused']);
  });

  it('counts charges by outcome: charged, replayed, insufficient', async () => {
    const subject = accountId('otel');
    await tg.accounts.create(subject, { plan: 'free' });
    recorder.clear();
    await tg.credits.charge(subject, { required: 20, operationId: 'op1' });
    await tg.credits.charge(subject, { required: 20, operationId: 'op1' });
    await tg.credits.charge(subject, { required: 20 });
    expect(recorder.total(TELEMETRY_NAMES.charges, { 'tollgate.outcome': 'charged' })).toBe(1);
    expect(recorder.total(TELEMETRY_NAMES.charges, { 'tollgate.outcome': 'replayed' })).toBe(1);
    expect(recorder.total(TELEMETRY_NAMES.charges, { 'tollgate.outcome': 'insufficient' })).toBe(1);
  });

  it('a record that is not there is an outcome, not a failure: no error status, no store failure', async () => {
    recorder.clear();
    await expect(tg.limits.admit(accountId('nobody'))).rejects.toThrowError(/No account/);
    expect(recorder.spans[0]!.attributes['tollgate.outcome']).toBe('account_not_found');
    expect(recorder.spans[0]!.status).toBeUndefined();
    expect(recorder.total(TELEMETRY_NAMES.storeFailures)).toBe(0);
  });

  it('a store failure marks the span failed with the error and counts a store failure', async () => {
    // acceptEviction: the charge's script is sent (and fails), with no INFO read before it.
    const down = createTollgate({
      plans: EXAMPLE_PLANS,
      redis: fromIoredis({ call: () => Promise.reject(new Error('connect ECONNREFUSED')) }),
      clock: clock.fn,
      acceptEviction: true,
    });
    recorder.clear();
    await expect(down.credits.charge('acct_x', { required: 1 })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(recorder.spans[0]).toMatchObject({ name: 'tollgate charge', ended: true, status: { code: 2 }, attributes: { 'tollgate.outcome': 'unavailable' } });
    expect(recorder.spans[0]!.exceptions[0]).toBeInstanceOf(StoreUnavailableError);
    expect(recorder.total(TELEMETRY_NAMES.storeFailures, { 'tollgate.script': 'charge' })).toBe(1);
  });

  it('telemetry: false records nothing; a tracer and meter can be given instead of the global ones', async () => {
    const off = createTollgate({ plans: EXAMPLE_PLANS, redis: fromIoredis(io), prefix: uniquePrefix('telemetry'), clock: clock.fn, telemetry: false });
    const subject = accountId('otel');
    await off.accounts.create(subject, { plan: 'free' });
    recorder.clear();
    await off.limits.admit(subject);
    expect(recorder.spans).toEqual([]);
    expect(recorder.counts).toEqual([]);

    const own = new Recorder();
    const given = createTollgate({
      plans: EXAMPLE_PLANS,
      redis: fromIoredis(io),
      prefix: uniquePrefix('telemetry'),
      clock: clock.fn,
      telemetry: { tracer: own.tracer, meter: own.meter },
    });
    await given.accounts.create(subject, { plan: 'free' });
    await given.limits.admit(subject);
    expect(recorder.spans).toEqual([]);
    expect(own.spans.map((s) => s.name)).toEqual(['tollgate createAccount', 'tollgate admit']);
    expect(own.total(TELEMETRY_NAMES.admits)).toBe(1);
  });

  it('refuses a telemetry option that is not true, false or { tracer, meter }', () => {
    const redis = fromIoredis(io);
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis, telemetry: 'on' as never })).toThrowError(InvalidInputError);
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis, telemetry: { tracer: {} as never } })).toThrowError(/Tracer/);
  });
});

describe('telemetry without an SDK', () => {
  it('observes no call while the tracer provider is the no-op one; an SDK registered later gets a span per call', async () => {
    trace.disable();
    metrics.disable();
    const io = await connectIoredis();
    try {
      const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: fromIoredis(io), prefix: uniquePrefix('telemetry-late') });
      const subject = accountId('late');
      await tg.accounts.create(subject, { plan: 'free' });
      expect((await tg.limits.admit(subject)).allowed).toBe(true);
      const recorder = new Recorder();
      trace.setGlobalTracerProvider({ getTracer: () => recorder.tracer } as TracerProvider);
      await tg.limits.admit(subject);
      expect(recorder.spans.map((span) => [span.name, span.attributes['tollgate.outcome'], span.ended])).toEqual([['tollgate admit', 'ok', true]]);
      // The meter was the API's no-op when the tollgate was made, and the metrics API does not
      // hand a later SDK to it: counters need the SDK first, as OpenTelemetry asks.
      expect(recorder.counts).toEqual([]);
    } finally {
      trace.disable();
      await io.quit();
    }
  });
});
