/**
 * The whole quota state of an account on one surface (SPEC §9 usage body), read without
 * counting a request (SPEC §4: usage is free). Script: lua/usage.lua (also reached with a key
 * through keys.verify(key, { usage: true }), one round trip).
 */
import type { Context } from "./context.ts";
import { creditsFrom, cycleFrom, type AccountAttributes } from "./records.ts";
import type { Usage } from "./rules/usage.ts";
import { usage as usageScript } from "./scripts/bundle.generated.ts";
import { windowsFromReply } from "./windows.ts";
import { mostRestrictive } from "./rules/windows.ts";

export type { Usage };

/** Decodes usage.lua's reply. */
export function usageFrom(reply: unknown[], surface: string): Usage {
  const { states: windows, retries, next } = windowsFromReply(reply);
  const a = JSON.parse(String(reply[next])) as AccountAttributes;
  const { index } = mostRestrictive(windows, retries);
  const surfaces = String(a.holdsSurfaces ?? "");
  return {
    plan: String(a.plan),
    credits: creditsFrom(a),
    cycle: cycleFrom(a),
    rateLimit: { ...windows[index]!, surface },
    windows,
    holds: { active: Number(a.active ?? 0), cap: Number(a.holdsCap ?? 0), maxItems: Number(a.holdsMaxItems ?? 0), surfaces: surfaces === "" ? [] : surfaces.split(",") },
    now: Number(a.now),
  };
}

export async function readUsage(ctx: Context, subject: string, options: { surface?: string } = {}): Promise<Usage> {
  const keys = ctx.keys(subject);
  const surface = ctx.accountSurface(options.surface ?? "api");
  const reply = await ctx.runner.run(usageScript, keys, {
    surface,
    stagger: ctx.staggerOf(keys.subject),
    keyId: "",
    keyDigest: "",
  });
  return usageFrom(reply, surface);
}
