/**
 * Events in the reference model (docs/events.md): the same thresholds, checked at the same
 * steps as lua/lib/events.lua checks them, and each subject's outbox, so the model writes
 * the events the scripts write, in the same order: a rollover's cycle.started then its check,
 * a lapsed hold's hold.lapsed before its refund, a movement's check after it. The outbox keeps
 * what the joined groups have not all handled, within maxPerSubject.
 */
import { usedLimit, type Threshold } from '../rules/events.ts';
import type { ModelAccount, ModelEvents, ModelOutbox, ModelOutboxEntry } from './core.ts';

export type { ModelEvents, ModelOutbox, ModelOutboxEntry } from './core.ts';

/** The available credits of an account: its cycle balance. */
export function available(a: ModelAccount): number {
  return a.balance;
}

function holds(t: Threshold, a: ModelAccount): boolean {
  return 'below' in t ? available(a) <= t.below : a.balance <= usedLimit(t.usedPercent, a.allowance);
}

/**
 * Fires each condition that started to hold and re-arms each that stopped (lua/lib/events.lua's
 * events_check): thresholds in their order, then depletion. `silent` notes them only.
 */
export function checkEvents(a: ModelAccount, silent = false): void {
  const e = a.events;
  if (!e) return;
  const was = e.fired;
  let fired = 0;
  const avail = available(a);
  e.thresholds.forEach((t, i) => {
    const bit = 2 ** (i + 1);
    const had = silent || Math.floor(was / bit) % 2 === 1;
    if (holds(t, a)) {
      fired += bit;
      if (!had) e.emit('credits.threshold', { threshold: { ...t }, available: avail, cycle: a.cycle });
    } else if (had && !silent) e.emit('credits.restored', { threshold: { ...t }, available: avail, cycle: a.cycle });
  });
  if (avail <= 0) {
    fired += 1;
    if (was % 2 === 0 && !silent) e.emit('credits.depleted', { available: avail, cycle: a.cycle });
  } else if (was % 2 === 1 && !silent) e.emit('credits.restored', { threshold: null, available: avail, cycle: a.cycle });
  e.fired = fired;
}

/** After a rollover or a new cycle was saved: cycle.started, then the check (cycle_save's hook). */
export function cycleOpened(a: ModelAccount): void {
  const e = a.events;
  if (!e) return;
  e.emit('cycle.started', { cycle: a.cycle, start: a.cycleStart, end: a.cycleEnd, allowance: a.allowance });
  checkEvents(a);
}

/** hold.lapsed, before the hold refunds what it still holds. */
export function holdLapsed(a: ModelAccount, h: { id: string; reserved: number; spent: number }): void {
  a.events?.emit('hold.lapsed', { holdId: h.id, reserved: h.reserved, spent: h.spent, refunded: h.reserved - h.spent });
}

/**
 * Sets an account's thresholds (lua/lib/events.lua's events_configure): `thresholds` null
 * takes events away. The conditions that hold now are noted, not fired.
 */
export function configureEvents(a: ModelAccount, own: boolean, thresholds: readonly Threshold[] | null, emit: ModelEvents['emit']): void {
  if (thresholds === null) {
    a.events = undefined;
    return;
  }
  a.events ??= { own, thresholds: [], fired: 0, dropped: 0, emit };
  a.events.own = own;
  a.events.thresholds = thresholds.map((t) => ({ ...t }));
  checkEvents(a, true);
}

/** A delivered event as the model hands it out: the entry and its delivery count. */
export interface ModelDelivery {
  entry: ModelOutboxEntry;
  attempts: number;
}

/**
 * Delivery in the model, as lua/readEvents.lua and lua/ackEvents.lua do it: per group, an
 * entry goes to one taker, and to another (with its count) once retryMs passed without an
 * acknowledgement; an entry every joined group acknowledged leaves the outbox.
 */
export class ModelEventsDelivery {
  constructor(
    private readonly outboxes: Map<string, ModelOutbox>,
    private readonly groups: Map<string, Map<string, unknown>>,
    private readonly now: () => number,
  ) {}

  join(group: string): void {
    if (!this.groups.has(group)) this.groups.set(group, new Map());
  }

  leave(group: string): void {
    this.groups.delete(group);
    for (const outbox of this.outboxes.values()) for (const entry of outbox.entries) entry.deliveries.delete(group);
    for (const subject of [...this.outboxes.keys()]) this.trim(subject);
  }

  /** Subjects whose outbox keeps events. */
  subjects(): string[] {
    return [...this.outboxes.entries()].filter(([, o]) => o.entries.length > 0).map(([s]) => s);
  }

  /** The group's next events of the subject: those due again first, then new ones. */
  take(group: string, subject: string, count: number, retryMs: number): ModelDelivery[] {
    const outbox = this.outboxes.get(subject);
    if (!outbox) return [];
    const now = this.now();
    const out: ModelDelivery[] = [];
    for (const entry of outbox.entries) {
      const d = entry.deliveries.get(group);
      if (d && !d.acked && now - d.at >= retryMs && out.length < count) {
        d.count += 1;
        d.at = now;
        out.push({ entry, attempts: d.count });
      }
    }
    for (const entry of outbox.entries) {
      if (out.length >= count) break;
      if (entry.deliveries.has(group)) continue;
      if (entry.group !== undefined && entry.group !== group) {
        entry.deliveries.set(group, { count: 0, at: now, acked: true });
        continue;
      }
      entry.deliveries.set(group, { count: 1, at: now, acked: false });
      out.push({ entry, attempts: 1 });
    }
    return out;
  }

  /** Acknowledges the group's handled entries, then drops what every joined group handled. */
  ack(group: string, subject: string, ids: readonly string[]): number {
    const outbox = this.outboxes.get(subject);
    if (!outbox) return 0;
    for (const entry of outbox.entries) {
      const d = entry.deliveries.get(group);
      if (d && ids.includes(entry.id)) d.acked = true;
    }
    return this.trim(subject);
  }

  private trim(subject: string): number {
    const outbox = this.outboxes.get(subject);
    if (!outbox) return 0;
    const joined = [...this.groups.keys()];
    if (joined.length > 0) {
      const done = (entry: ModelOutboxEntry) => joined.every((g) => entry.deliveries.get(g)?.acked === true);
      while (outbox.entries.length > 0 && done(outbox.entries[0]!)) outbox.entries.shift();
    }
    return outbox.entries.length;
  }
}
