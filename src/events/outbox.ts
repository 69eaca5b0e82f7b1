/**
 * Where events wait (docs/events.md#delivery): each subject's outbox stream, written by the
 * script that moved the credit, and the deployment-wide keys consumers share, all under one
 * hash tag so a script may touch several of them on a cluster: the index of subjects with
 * events, the joined groups, each group's dead letters, the counts, the scan lock.
 * After a script reports events the library notes the subject in the index without waiting;
 * a notify lost with its process is found by the consumers' periodic scan of the outboxes.
 */
import type { Context } from '../context.ts';
import { NO_SUBJECT } from '../redisKeys.ts';
import { eventsNotify } from '../scripts/bundle.generated.ts';

/** The deployment-wide keys of events. */
export class EventKeys {
  private readonly base: string;
  constructor(prefix: string) {
    this.base = `${prefix}:{events}:`;
  }
  get pending(): string {
    return `${this.base}pending`;
  }
  get stats(): string {
    return `${this.base}stats`;
  }
  get groups(): string {
    return `${this.base}groups`;
  }
  get scanLock(): string {
    return `${this.base}scan`;
  }
  deadLetters(group: string): string {
    return `${this.base}dead:${group}`;
  }
}

/**
 * What the runner calls after a script reports events it wrote or dropped: the subject goes
 * into the index (not awaited: the caller never waits for it), drops are counted.
 */
export function eventsNotifier(ctx: Pick<Context, 'runner' | 'prefix'>, dropped?: (n: number) => void) {
  const keys = new EventKeys(ctx.prefix);
  return (subject: string, written: number, droppedNow: number): void => {
    if (droppedNow > 0) dropped?.(droppedNow);
    // A lost notify costs latency only: the consumers' scan finds the outbox.
    ctx.runner.run(eventsNotify, NO_SUBJECT, { pending: keys.pending, stats: keys.stats, subject, dropped: droppedNow }).catch(() => {});
    void written;
  };
}
