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

/**
 * The windows of a script reply (lua/lib/windows.lua): {code, spec, then per window of the
 * spec its remaining and resetMs, and its retryMs unless the spec is one fixed window}.
 * Returns each window's state, its retry (0: did not deny, -1: never fits), and the index of
 * what the script appended after the windows.
 */
export function windowsFromReply(reply: readonly unknown[]): { states: RateLimitState[]; retries: number[]; next: number } {
  const code = Number(reply[0]);
  const windows = parsedSpec(String(reply[1]));
  const states: RateLimitState[] = [];
  const retries: number[] = [];
  if (windows.length === 1 && windows[0]!.algorithm === "fixed") {
    const w = windows[0]!;
    const resetMs = Number(reply[3]);
    states.push({ limit: w.limit, remaining: Number(reply[2]), resetMs, windowMs: w.windowMs, algorithm: "fixed" });
    retries.push(code === Code.RATE_LIMITED ? resetMs : code === Code.COST_EXCEEDS_LIMIT ? -1 : 0);
    return { states, retries, next: 4 };
  }
  let i = 2;
  for (const w of windows) {
    states.push({ limit: w.limit, remaining: Number(reply[i]), resetMs: Number(reply[i + 1]), windowMs: w.windowMs, algorithm: w.algorithm ?? "fixed" });
    retries.push(Number(reply[i + 2]));
    i += 3;
  }
  return { states, retries, next: i };
}

