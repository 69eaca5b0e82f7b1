/**
 * Overrides in the reference model (docs/limits.md, "Overrides"): one subject's own windows on
 * a surface, in place of its plan's or policy's, until they are cleared or their end passes.
 * The counts stay where they are (by window length), so a changed limit keeps what was used.
 */
import { overrideWord, type Override, type OverrideOptions } from '../overrides.ts';
import { policyWindows } from '../rules/limits.ts';
import { surfaceWindows } from './windows.ts';
import { subjectId } from '../rules/validate.ts';
import { surfaceName, windowsFromSpec, type Window } from '../rules/windows.ts';
import type { ModelCore } from './core.ts';

function keyOf(subject: string, policy: string | undefined, surface: string): string {
  return `${subject}\0${policy ?? ''}\0${surface}`;
}

/** The windows in force for a subject on a surface: its live override's, or `base`. */
export function windowsInForce(
  core: ModelCore,
  subject: string,
  policy: string | undefined,
  surface: string,
  base: readonly Window[],
  now: number,
): readonly Window[] {
  if (core.overrides.size === 0) return base;
  const key = keyOf(subject, policy, surface);
  const override = core.overrides.get(key);
  if (override === undefined) return base;
  if (override.expiresAt !== 0 && now >= override.expiresAt) {
    core.overrides.delete(key);
    return base;
  }
  return override.windows;
}

/** As limits.override: sets or (windows: null) clears a subject's override on a surface. */
export function setOverride(core: ModelCore, subject: string, options: OverrideOptions): void {
  const id = subjectId(subject);
  const word = overrideWord(options);
  let surface: string;
  if (options.policy === undefined) {
    surface = core.accountSurface(options.surface ?? 'api');
    surfaceWindows(core.account(id).plan.limits, id, surface);
  } else {
    surface = surfaceName('Surface', options.surface ?? 'api');
    policyWindows(core.policies, options.policy, surface);
  }
  const key = keyOf(id, options.policy, surface);
  if (word === '') {
    core.overrides.delete(key);
    return;
  }
  const [, spec, end] = /^o=(\S+)@(\d+)$/.exec(word)!;
  core.overrides.set(key, { windows: windowsFromSpec(spec!.replaceAll(',', ' ')), expiresAt: Number(end) });
}

/** As limits.overrides: the subject's overrides that have not ended, the account's first. */
export function listOverrides(core: ModelCore, subject: string): Override[] {
  const id = subjectId(subject);
  const now = core.now();
  const found: Override[] = [];
  for (const [key, o] of core.overrides) {
    const [owner, policy, surface] = key.split('\0') as [string, string, string];
    if (owner !== id || (o.expiresAt !== 0 && now >= o.expiresAt)) continue;
    const windows = o.windows.map((w) => ({ ...w }));
    found.push(policy === '' ? { surface, windows, expiresAt: o.expiresAt || null } : { surface, policy, windows, expiresAt: o.expiresAt || null });
  }
  return found.sort((a, b) => Number(a.policy !== undefined) - Number(b.policy !== undefined));
}
