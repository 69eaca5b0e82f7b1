/**
 * The deny cache (createTollgate's `denyCache`): when a verified key, or a policy subject, is
 * denied with nothing left in the denying window, this process answers that key's or
 * subject's further requests on the surface from memory until the denial runs out by
 * tollgate's clock, with the same headers and no Redis call, so a flood from one denied
 * caller costs Redis nothing. Keyed by the key's digest (never by the subject alone, so a
 * forged key still gets its 401) or by policy and subject. reset and changePlan in this
 * process forget the subject's entries; a plan change made by another process reaches this
 * one when the cached denial runs out (at the window's reset at the latest). Bounded: past
 * maxEntries the oldest entry goes.
 */
import type { Denial } from './rules/limits.ts';

interface Entry {
  subject: string;
  storedAt: number;
  until: number;
  denial: Denial;
}

export class DenyCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number,
  ) {}

  /**
   * The cached denial for this caller and surface, its times counted down; or undefined. A cost
   * above some window's limit is never served from here: Redis answers it cost_exceeds_limit.
   */
  get(cacheKey: string, cost = 1): Denial | undefined {
    const entry = this.entries.get(cacheKey);
    if (entry === undefined || entry.denial.windows.some((w) => cost > (w.burst ?? w.limit))) return undefined;
    const now = this.now();
    if (now >= entry.until) {
      this.entries.delete(cacheKey);
      return undefined;
    }
    const elapsed = now - entry.storedAt;
    const later = (ms: number) => Math.max(0, ms - elapsed);
    const d = entry.denial;
    return {
      ...d,
      rateLimit: { ...d.rateLimit, resetMs: later(d.rateLimit.resetMs) },
      windows: d.windows.map((w) => ({ ...w, resetMs: later(w.resetMs) })),
      retryAfterMs: d.retryAfterMs === null ? null : Math.max(1, later(d.retryAfterMs)),
    };
  }

  /**
   * Remembers a denial that no request of this caller can beat before it runs out. A fixed
   * window with nothing left refuses every cost until its reset; a sliding one frees room
   * gradually (and a bucket refills so), so its retry for a costly request is later than a
   * cheaper request's: only a denial of cost 1 is remembered there.
   */
  remember(cacheKey: string, subject: string, denial: Denial, cost: number): void {
    if (denial.reason !== 'rate_limited' || denial.retryAfterMs === null || denial.rateLimit.remaining > 0) return;
    if (cost > 1 && denial.rateLimit.algorithm !== 'fixed') return;
    const now = this.now();
    this.entries.delete(cacheKey);
    this.entries.set(cacheKey, { subject, storedAt: now, until: now + denial.retryAfterMs, denial });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Forgets every entry of the subject (after reset or a plan change in this process). */
  forget(subject: string): void {
    for (const [key, entry] of this.entries) if (entry.subject === subject) this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
