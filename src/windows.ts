/**
 * The windows of a script reply, decoded against the window spec the reply names (see
 * src/rules/windows.ts for the spec and the window rules).
 */
import { Code } from "./scripts/codes.ts";
import { windowsFromSpec, type RateLimitState, type Window } from "./rules/windows.ts";

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
}

/**
 * The `windows` reply form at reply[at]: the spec, then per window of
 * the spec its remaining and resetMs, and its retryMs unless the spec is one fixed window (a
 * fixed window's retry is then its reset when the code, reply[0], denied). The generated
 * decoders of admit, admitPolicy, verifyKey and usage call it.
 */
export function windowsForm(reply: readonly unknown[], at: number): WindowsForm {
  const code = reply[0];
  const windows = parsedSpec(String(reply[at]));
  const states: RateLimitState[] = [];
  const retries: number[] = [];
  if (windows.length === 1 && windows[0]!.algorithm === "fixed") {
    const w = windows[0]!;
    const resetMs = Number(reply[at + 2]);
    states.push({ limit: w.limit, remaining: Number(reply[at + 1]), resetMs, windowMs: w.windowMs, algorithm: "fixed" });
    retries.push(code === Code.RATE_LIMITED ? resetMs : code === Code.COST_EXCEEDS_LIMIT ? -1 : 0);
    return { states, retries, next: at + 3 };
  }
  let i = at + 1;
  for (const w of windows) {
    states.push({ limit: w.limit, remaining: Number(reply[i]), resetMs: Number(reply[i + 1]), windowMs: w.windowMs, algorithm: w.algorithm ?? "fixed" });
    retries.push(Number(reply[i + 2]));
    i += 3;
  }
  return { states, retries, next: i };
}

