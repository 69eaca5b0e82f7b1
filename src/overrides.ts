/**
 * Overrides (docs/limits.md, "Overrides"): one subject's own windows on a surface, for an
 * account or a policy subject, without a plan change. Stored as the first word of the
 * subject's counts on that surface (lua/lib/windows.lua), so an admit reads it in the same
 * read and the counts carry over when the limit changes. Scripts: lua/overrideLimits.lua,
 * lua/listOverrides.lua.
 */
import { InvalidInputError } from './errors.ts';
import { count } from './rules/validate.ts';
import { validateWindows, windowsFromSpec, windowsSpec, type Window } from './rules/windows.ts';

/** limits.override's options. */
export interface OverrideOptions {
  /** Default "api". */
  surface?: string;
  /**
   * The subject's own windows on the surface, in place of its plan's or policy's (a window may
   * have limit 0 there: a ban); null clears the override.
   */
  windows: readonly Window[] | null;
  /** The policy, for a subject without an account. */
  policy?: string;
  /** When the override ends (ms since the epoch, or a Date): a temporary raise or ban. Default: no end. */
  expiresAt?: number | Date;
}

/** One of a subject's overrides, as limits.overrides lists them. */
export interface Override {
  /** The surface it is on. */
  surface: string;
  /** The policy, for a policy subject's override; absent for an account's. */
  policy?: string;
  /** The windows in force while it lasts. */
  windows: Window[];
  /** When it ends (ms since the epoch); null for no end. */
  expiresAt: number | null;
}

/** The override word lua/lib/windows.lua reads ('' clears), from checked options. */
export function overrideWord(options: OverrideOptions): string {
  if (options === null || typeof options !== 'object') throw new InvalidInputError('limits.override needs { surface?, windows, policy?, expiresAt? }');
  const expiresAt = options.expiresAt instanceof Date ? options.expiresAt.getTime() : options.expiresAt;
  const end = expiresAt === undefined ? 0 : count('expiresAt', expiresAt, 1);
  if (options.windows === null) return '';
  const spec = windowsSpec(validateWindows('windows', options.windows, 0));
  return `o=${spec.replaceAll(' ', ',')}@${end}`;
}

/** The windows and end of a listed override. */
export function overrideOf(surface: string, spec: string, expiresAt: number, policy?: string): Override {
  const windows = windowsFromSpec(spec);
  return policy === undefined ? { surface, windows, expiresAt: expiresAt || null } : { surface, policy, windows, expiresAt: expiresAt || null };
}
