/**
 * OpenTelemetry: a span per quota-store call and counters of admits, denials,
 * charges and store failures, through `@opentelemetry/api` (an optional peer). The API is a
 * no-op until the host registers an SDK, so a tollgate costs nearly nothing more when none is;
 * with `telemetry: false`, or without the package, the runner is the plain ScriptRunner and
 * nothing here runs at all: the hot path is the one without telemetry.
 */
import { createRequire } from 'node:module';
import { InvalidInputError, isTollgateError } from './errors.ts';
import { Code } from './scripts/codes.ts';
import { ScriptRunner, type CallSubject } from './scripts/runner.ts';
import type { Script, ScriptReply } from './scripts/script.ts';
import { shadowDenialsOf } from './rules/windows.ts';
import type { WindowsForm } from './windows.ts';

/** Attribute values as OpenTelemetry takes them. */
export type TelemetryAttributes = Record<string, string | number | boolean>;

/** The part of an OpenTelemetry `Span` tollgate uses. */
export interface SpanLike {
  /** Sets one attribute. */
  setAttribute(key: string, value: string | number | boolean): unknown;
  /** Marks the span failed (code 2, ERROR). */
  setStatus(status: { code: number; message?: string }): unknown;
  /** Records the error a call failed with. */
  recordException(exception: Error): unknown;
  /** Ends the span: its duration is the store call's. */
  end(): void;
}

/** The part of an OpenTelemetry `Tracer` tollgate uses (`trace.getTracer("tollgate")`). */
export interface TracerLike {
  /** Starts a span; tollgate passes the CLIENT kind (2) and the call's attributes. */
  startSpan(name: string, options?: { kind?: number; attributes?: TelemetryAttributes }): SpanLike;
}

/** The part of an OpenTelemetry `Counter` tollgate uses. */
export interface CounterLike {
  /** Adds `value` under these attributes. */
  add(value: number, attributes?: TelemetryAttributes): void;
}

/** The part of an OpenTelemetry `Meter` tollgate uses (`metrics.getMeter("tollgate")`). */
export interface MeterLike {
  /** Makes a monotonic counter; tollgate makes its counters once, in createTollgate. */
  createCounter(name: string, options?: { description?: string; unit?: string }): CounterLike;
}

/**
 * createTollgate's `telemetry`: true (the default) uses `@opentelemetry/api`'s global tracer
 * and meter when the package is installed; false turns telemetry off; an object gives the
 * tracer and meter to use (a missing one is not used).
 */
export type TelemetryOption = boolean | { tracer?: TracerLike; meter?: MeterLike };

/** The names tollgate reports under. */
export const TELEMETRY_NAMES = {
  /** Instrumentation scope of the tracer and the meter. */
  scope: 'tollgate',
  /** Requests admitted (limits.admit, keys.verify, a policy's admit), by script and surface. */
  admits: 'tollgate.admits',
  /** Requests denied by a window (rate_limited, cost_exceeds_limit), by script, surface and reason. */
  denials: 'tollgate.denials',
  /** Charges (credits.charge), by outcome: charged, replayed or insufficient. */
  charges: 'tollgate.charges',
  /** Store calls that failed or timed out (StoreUnavailableError), by script. */
  storeFailures: 'tollgate.store.failures',
  /**
   * Requests a rate-limit middleware decided without the quota store (its onStoreError "open"
   * or "local"), by mode, surface and outcome (passed or denied).
   */
  degraded: 'tollgate.degraded',
  /**
   * Requests a shadow window would have denied (counted, never denied: docs/limits.md), by
   * script, surface and the window's length in ms.
   */
  shadowDenials: 'tollgate.shadow.denials',
  /** Events not written because their subject's outbox was full (docs/events.md#size-bound). */
  eventsDropped: 'tollgate.events.dropped',
} as const;

interface Instruments {
  /** The tracer to use now; undefined while spans would go nowhere (no SDK registered yet). */
  tracer: () => TracerLike | undefined;
  admits: CounterLike | undefined;
  denials: CounterLike | undefined;
  charges: CounterLike | undefined;
  storeFailures: CounterLike | undefined;
  degraded: CounterLike | undefined;
  shadowDenials: CounterLike | undefined;
  eventsDropped: CounterLike | undefined;
}

interface OtelApi {
  trace: { getTracer(name: string): TracerLike; getTracerProvider?(): { getDelegate?(): unknown } };
  metrics?: { getMeter(name: string): MeterLike };
  /** A provider with no delegate answers getDelegate() with the API's own no-op provider. */
  ProxyTracerProvider?: new () => { getDelegate?(): unknown };
  createNoopMeter?: () => MeterLike;
}

const SPAN_KIND_CLIENT = 2;
const STATUS_ERROR = 2;
const ADMITS = new Set(['admit', 'verifyKey', 'admitPolicy']);
/** The outcome names of the script codes: "ok", "rate_limited", ... */
const OUTCOMES: readonly string[] = Object.entries(Code).reduce<string[]>((names, [name, code]) => ((names[code] = name.toLowerCase()), names), []);

function loadApi(): OtelApi | undefined {
  try {
    return createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
  } catch {
    return undefined;
  }
}

/** The instruments for createTollgate's `telemetry`, or undefined when it is off. */
export function instruments(option: TelemetryOption | undefined): Instruments | undefined {
  if (option === false) return undefined;
  let tracer: TracerLike | undefined;
  let meter: MeterLike | undefined;
  let current: (() => TracerLike | undefined) | undefined;
  if (option === undefined || option === true) {
    const api = loadApi();
    if (!api) return undefined;
    tracer = api.trace.getTracer(TELEMETRY_NAMES.scope);
    meter = api.metrics?.getMeter(TELEMETRY_NAMES.scope);
    // Without an SDK the API hands out no-ops: a meter that stays one (the metrics API does not
    // proxy), and a tracer that would stay one if another copy of the API (ESM beside CommonJS)
    // registers the SDK later. So the tracer is asked for again whenever the global provider
    // changes, and while it is the API's no-op a call is not observed at all: the default costs
    // nothing measurable until an SDK is there.
    if (meter !== undefined && meter === api.createNoopMeter?.()) meter = undefined;
    const noopProvider = api.ProxyTracerProvider && new api.ProxyTracerProvider().getDelegate?.();
    if (noopProvider !== undefined && api.trace.getTracerProvider) {
      let seen: unknown = noopProvider;
      let live: TracerLike | undefined;
      current = () => {
        const provider = api.trace.getTracerProvider!().getDelegate?.();
        if (provider !== seen) {
          seen = provider;
          live = provider === noopProvider ? undefined : api.trace.getTracer(TELEMETRY_NAMES.scope);
        }
        return live;
      };
    }
  } else {
    if (typeof option !== 'object' || option === null) throw new InvalidInputError('telemetry must be true, false or { tracer?, meter? }');
    ({ tracer, meter } = option);
    if (tracer !== undefined && typeof tracer?.startSpan !== 'function')
      throw new InvalidInputError('telemetry.tracer must be an OpenTelemetry Tracer (trace.getTracer(...))');
    if (meter !== undefined && typeof meter?.createCounter !== 'function')
      throw new InvalidInputError('telemetry.meter must be an OpenTelemetry Meter (metrics.getMeter(...))');
  }
  if (!tracer && !meter) return undefined;
  return {
    tracer: current ?? (() => tracer),
    admits: meter?.createCounter(TELEMETRY_NAMES.admits, { description: 'Requests admitted' }),
    denials: meter?.createCounter(TELEMETRY_NAMES.denials, { description: 'Requests denied by a rate-limit window' }),
    charges: meter?.createCounter(TELEMETRY_NAMES.charges, { description: 'Charges by outcome' }),
    storeFailures: meter?.createCounter(TELEMETRY_NAMES.storeFailures, { description: 'Quota-store calls that failed or timed out' }),
    degraded: meter?.createCounter(TELEMETRY_NAMES.degraded, { description: 'Requests decided without the quota store (onStoreError open or local)' }),
    shadowDenials: meter?.createCounter(TELEMETRY_NAMES.shadowDenials, { description: 'Requests a shadow window would have denied' }),
    eventsDropped: meter?.createCounter(TELEMETRY_NAMES.eventsDropped, { description: 'Events dropped because their outbox was full' }),
  };
}

/**
 * The script runner with telemetry: each call in a span `tollgate <script>` (CLIENT kind,
 * attributes db.system.name, tollgate.script and tollgate.outcome), and the counters.
 */
export class ObservedRunner extends ScriptRunner {
  private readonly instruments: Instruments;
  private readonly counting: boolean;

  constructor(observe: Instruments, ...args: ConstructorParameters<typeof ScriptRunner>) {
    super(...args);
    this.instruments = observe;
    this.counting = [observe.admits, observe.denials, observe.charges, observe.storeFailures, observe.shadowDenials].some((counter) => counter !== undefined);
  }

  override run<P, R extends ScriptReply>(script: Script<P, R>, keys: CallSubject, params: P, holdId?: string): Promise<R> {
    const tracer = this.instruments.tracer();
    if (!this.counting && !tracer) return super.run(script, keys, params, holdId);
    return this.observed(tracer, script, params, () => super.run(script, keys, params, holdId));
  }

  /** A durable movement does not go through run: it is observed here, once. */
  override move<P, R extends ScriptReply>(script: Script<P, R>, keys: CallSubject, params: P, holdId: string | undefined, operationId: string): Promise<R> {
    const tracer = this.durable && this.instruments.tracer();
    if (!this.durable || (!this.counting && !tracer)) return super.move(script, keys, params, holdId, operationId);
    return this.observed(tracer || undefined, script, params, () => super.move(script, keys, params, holdId, operationId));
  }

  private async observed<P, R extends ScriptReply>(tracer: TracerLike | undefined, script: Script<P, R>, params: P, call: () => Promise<R>): Promise<R> {
    const span = tracer?.startSpan(`tollgate ${script.name}`, {
      kind: SPAN_KIND_CLIENT,
      attributes: { 'db.system.name': 'redis', 'tollgate.script': script.name },
    });
    try {
      const reply = await call();
      const outcome = OUTCOMES[reply.code] ?? String(reply.code);
      span?.setAttribute('tollgate.outcome', outcome);
      this.count(script.name, params, reply, outcome);
      return reply;
    } catch (error) {
      const code = isTollgateError(error) ? error.code : 'error';
      span?.setAttribute('tollgate.outcome', code);
      if (code === 'unavailable' || code === 'error') {
        this.instruments.storeFailures?.add(1, { 'tollgate.script': script.name });
        span?.setStatus({ code: STATUS_ERROR, message: error instanceof Error ? error.message : String(error) });
        if (error instanceof Error) span?.recordException(error);
      }
      throw error;
    } finally {
      span?.end();
    }
  }

  private count(name: string, params: unknown, reply: ScriptReply, outcome: string): void {
    const { admits, denials, charges, shadowDenials } = this.instruments;
    if (ADMITS.has(name)) {
      const { surface, cost } = params as { surface?: string; cost?: number };
      // cost 0 is limits.peek: it counts nothing.
      if (cost === 0 || reply.code === Code.KEY_REFUSED) return;
      const attributes = { 'tollgate.script': name, 'tollgate.surface': surface ?? '' };
      const form = (reply as { windows?: WindowsForm }).windows;
      if (shadowDenials && form) {
        for (const window of shadowDenialsOf(form.states, form.retries) ?? []) shadowDenials.add(1, { ...attributes, 'tollgate.window_ms': window.windowMs });
      }
      if (reply.code === Code.RATE_LIMITED || reply.code === Code.COST_EXCEEDS_LIMIT || reply.code === Code.CONCURRENCY)
        denials?.add(1, { ...attributes, 'tollgate.reason': outcome });
      else admits?.add(1, attributes);
    } else if (name === 'charge') {
      const charged = reply.code === Code.OK ? 'charged' : reply.code === Code.REPLAYED ? 'replayed' : 'insufficient';
      charges?.add(1, { 'tollgate.outcome': charged });
    }
  }
}
