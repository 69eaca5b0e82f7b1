/**
 * The windows of a script reply, decoded against the window spec the reply names (see
 * src/rules/windows.ts for the spec and the window rules).
 */
import { Code } from './scripts/codes.ts';
import { windowsFromSpec, type RateLimitState, type Window } from './rules/windows.ts';

/** Parsed window specs: a deployment has few, and every reply names one. */
const specCache = new Map<string, Window[]>();

function parsedSpec(spec: string): Window[] {
  let windows = specCache.get(spec);
  if (windows === undefined) {
    windows = windowsFromSpec(spec);
    if (specCache.size < 1000) specCache.set(spec, windows);
  }
  return windows;
}

/** The windows of a script reply, decoded: each window's state and retry. */
export interface WindowsForm {
  readonly states: RateLimitState[];
  /** Per window: 0 when it did not deny, -1 when the request never fits, else ms until it fits. */
  readonly retries: number[];
  /** The index of what the script put after the windows. */
  readonly next: number;
  /** The lease of the place a request took under a concurrency limit; 0: none. */
  readonly lease: number;
}

/**
 * The `windows` reply form (lua/lib/windows.lua) at reply[at]: the spec, then per window of
 * the spec its remaining and resetMs, and its retryMs unless the spec is one fixed window, not
 * a shadow (its retry is then its reset when the code, reply[0], denied). The generated
 * decoders of admit, admitPolicy, verifyKey and usage call it.
 */
export function windowsForm(reply: readonly unknown[], at: number): WindowsForm {
  const code = reply[0];
  const text = String(reply[at]);
  // '<subject's spec> | <key's spec>': a key with its own windows (lib/admit.lua).
  const bar = text.indexOf(' | ');
  const windows = bar < 0 ? parsedSpec(text) : [...parsedSpec(text.slice(0, bar)), ...parsedSpec(text.slice(bar + 3))];
  const keyFrom = bar < 0 ? windows.length : parsedSpec(text.slice(0, bar)).length;
  const states: RateLimitState[] = [];
  const retries: number[] = [];
  if (windows.length === 1 && windows[0]!.algorithm === 'fixed' && !windows[0]!.shadow) {
    const w = windows[0]!;
    const resetMs = Number(reply[at + 2]);
    states.push({ limit: w.limit, remaining: Number(reply[at + 1]), resetMs, windowMs: w.windowMs, algorithm: 'fixed' });
    retries.push(code === Code.RATE_LIMITED ? resetMs : code === Code.COST_EXCEEDS_LIMIT ? -1 : 0);
    return { states, retries, next: at + 3, lease: 0 };
  }
  let i = at + 1;
  let lease = 0;
  for (const [n, w] of windows.entries()) {
    const state: RateLimitState = {
      limit: w.limit,
      remaining: Number(reply[i]),
      resetMs: Number(reply[i + 1]),
      windowMs: w.windowMs,
      algorithm: w.algorithm ?? 'fixed',
    };
    if (w.burst !== undefined) state.burst = w.burst;
    if (w.shadow) state.shadow = true;
    if (n >= keyFrom) state.key = true;
    states.push(state);
    retries.push(Number(reply[i + 2]));
    i += 3;
    if (w.algorithm === 'concurrency') lease = Number(reply[i++]);
  }
  return { states, retries, next: i, lease };
}
