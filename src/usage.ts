/**
 * The whole quota state of an account on one surface (the usage body), read without
 * counting a request (usage is free). Script: usage (also reached with a key
 * through keys.verify(key, { usage: true }), one round trip).
 */
import type { Context } from './context.ts';
import { accountAttributes, creditsFrom, cycleFrom } from './records.ts';
import { mostRestrictive } from './rules/windows.ts';
import type { Usage } from './rules/usage.ts';
import { usage as usageScript } from './scripts/bundle.generated.ts';
import { Code } from './scripts/codes.ts';
import { afterDue } from './sweep.ts';
import type { WindowsForm } from './windows.ts';

export type { Usage };

/** The usage usage.lua's reply stands for. */
export function usageFrom(reply: { windows: WindowsForm; state: unknown }, surface: string): Usage {
  const { states: windows, retries } = reply.windows;
  const a = accountAttributes(reply.state);
  const { index } = mostRestrictive(windows, retries);
  const surfaces = String(a.holdsSurfaces ?? '');
  return {
    plan: String(a.plan),
    credits: creditsFrom(a),
    cycle: cycleFrom(a),
    rateLimit: { ...windows[index]!, surface },
    windows,
    holds: {
      active: Number(a.active ?? 0),
      cap: Number(a.holdsCap ?? 0),
      maxItems: Number(a.holdsMaxItems ?? 0),
      surfaces: surfaces === '' ? [] : surfaces.split(','),
    },
    now: Number(a.now),
  };
}

export async function readUsage(ctx: Context, subject: string, options: { surface?: string } = {}): Promise<Usage> {
  const redisKeys = ctx.redisKeys(subject);
  const surface = ctx.accountSurface(options.surface ?? 'api');
  const params = { surface, stagger: ctx.staggerOf(redisKeys.subject), keyId: '', keyDigest: '' };
  const reply = await afterDue(ctx, redisKeys, () => ctx.runner.run(usageScript, redisKeys, params));
  // Without a key id, nothing is refused.
  if (reply.code === Code.KEY_REFUSED) throw new Error(`usage refused no key: ${reply.reason}`);
  return usageFrom(reply, surface);
}
