/**
 * Events (`tollgate.events`, docs/events.md): consumers that deliver each subject's outbox at
 * least once per group, the dead letters, the counts. A consumer polls (no blocking command
 * is sent on the host's client): the index of subjects with events every POLL_MS, each such
 * subject's outbox through the group (Redis consumer groups: an event delivered to one
 * consumer is redelivered after retryMs when it was not acknowledged, with its delivery
 * count), and once per scanEvery the outboxes of every server, which finds a subject whose
 * notify was lost with its process. Scripts: readEvents, ackEvents, replayEvent, eventsNotify,
 * eventsPending, eventsForget, eventsGroup, eventsDead, eventsStats.
 */
import { randomBytes } from 'node:crypto';
import type { Context } from '../context.ts';
import { InvalidInputError } from '../errors.ts';
import { consumeArgs, groupName, type ConsumeOptions, type DeadLetter, type DeliveredEvent, type EventStats, type TollgateEvent } from '../rules/events.ts';
import { globEscape, scanAll } from '../scan.ts';
import { subjectId } from '../rules/validate.ts';
import {
  ackEvents,
  eventsDead,
  eventsForget,
  eventsGroup,
  eventsNotify,
  eventsPending,
  eventsStats,
  readEvents,
  replayEvent,
} from '../scripts/bundle.generated.ts';
import { NO_SUBJECT } from '../redisKeys.ts';
import { EventKeys } from './outbox.ts';

export type { ConsumeOptions, DeadLetter, DeliveredEvent, EventStats, Threshold, TollgateEvent, TollgateEventType } from '../rules/events.ts';

/** How often a consumer looks for new events: a new event is seen within about this. */
const POLL_MS = 200;
/** Subjects per page of the index. */
const PAGE = 100;
/** After a store failure, a consumer waits this long before it tries again. */
const FAILURE_PAUSE_MS = 1000;

/** An event id: unique deployment-wide, its subject and its outbox entry. */
export function eventId(subject: string, entry: string): string {
  return `${subject}/${entry}`;
}

function parseEventId(id: unknown): { subject: string; entry: string } {
  const text = typeof id === 'string' ? id : '';
  const at = text.lastIndexOf('/');
  if (at <= 0 || !/^\d+-\d+$/.test(text.slice(at + 1))) throw new InvalidInputError(`Not an event id: ${JSON.stringify(id)}`);
  return { subject: subjectId(text.slice(0, at)), entry: text.slice(at + 1) };
}

/** Events (`tollgate.events`): consume them, and look after the dead letters. */
export class Events {
  private readonly keys: EventKeys;

  /** @internal Made by createTollgate. */
  constructor(private readonly ctx: Context) {
    this.keys = new EventKeys(ctx.prefix);
  }

  /**
   * Delivers every event to `handler`, at least once per group, until `signal` aborts; then
   * resolves (it never rejects: a store failure is waited out). Any number of servers may run
   * it for one group: each event goes to one of them, and again only when its handler threw
   * or its process died (after retryMs, with `attempt` counting deliveries). After
   * maxAttempts it moves to the group's dead letters.
   *
   * @example
   * ```ts
   * const stop = new AbortController();
   * void tollgate.events.consume({ group: "email", signal: stop.signal, handler: async (event) => {
   *   if (event.type === "credits.threshold") await sendLowBalanceEmail(event.subject, event.data.available);
   * } });
   * ```
   */
  async consume(options: ConsumeOptions): Promise<void> {
    const o = consumeArgs(options);
    const consumer = `c${randomBytes(6).toString('hex')}`;
    let start = 0;
    while (!o.signal?.aborted) {
      let more = false;
      try {
        const groups = await this.group('join', o.group);
        const page = await this.ctx.runner.run(eventsPending, NO_SUBJECT, {
          pending: this.keys.pending,
          scanLock: this.keys.scanLock,
          start,
          count: PAGE,
          consumer,
          scanEveryMs: o.retryMs,
        });
        if (page.scan) await this.scanOutboxes();
        for (const { subject, score } of page.subjects) {
          if (o.signal?.aborted) break;
          await this.drain(subject, score, consumer, groups, o);
        }
        more = page.subjects.length === PAGE;
        start = more ? start + PAGE : 0;
      } catch {
        await pause(FAILURE_PAUSE_MS, o.signal);
        continue;
      }
      if (!more) await pause(POLL_MS, o.signal);
    }
  }

  /** The group's dead letters, oldest first. */
  async deadLetters(options: { group: string }): Promise<DeadLetter[]> {
    const group = groupName(options?.group);
    const reply = await this.ctx.runner.run(eventsDead, NO_SUBJECT, { deadLetters: this.keys.deadLetters(group), action: 'list', id: '', letter: '' });
    return reply.letters.map(({ letter }) => JSON.parse(letter) as DeadLetter).sort((x, y) => x.deadAt - y.deadAt || (x.event.id < y.event.id ? -1 : 1));
  }

  /** Delivers a dead letter of the group again (to that group only); false when it has none by that id. */
  async replay(group: string, id: string): Promise<boolean> {
    const name = groupName(group);
    const { subject } = parseEventId(id);
    const deadLetters = this.keys.deadLetters(name);
    const found = await this.ctx.runner.run(eventsDead, NO_SUBJECT, { deadLetters, action: 'list', id: '', letter: '' });
    const letter = found.letters.find((l) => l.id === id);
    if (!letter) return false;
    const { event } = JSON.parse(letter.letter) as DeadLetter;
    const { entry } = parseEventId(event.id);
    // Written back first, then taken from the dead letters: a crash between delivers it twice, never not at all.
    await this.ctx.runner.run(replayEvent, this.ctx.redisKeys(subject), {
      id: entry,
      type: event.type,
      at: String(event.at),
      data: JSON.stringify(event.data),
      group: name,
    });
    await this.ctx.runner.run(eventsNotify, NO_SUBJECT, { pending: this.keys.pending, stats: this.keys.stats, subject, dropped: 0 });
    await this.ctx.runner.run(eventsDead, NO_SUBJECT, { deadLetters, action: 'take', id, letter: '' });
    return true;
  }

  /** Retires a group: its dead letters go, and no outbox keeps events for it any more. */
  async removeGroup(group: string): Promise<void> {
    await this.group('leave', groupName(group));
  }

  /** Events dropped by full outboxes, subjects with events not yet handled, the groups with their dead letters. */
  async stats(): Promise<EventStats> {
    const reply = await this.ctx.runner.run(eventsStats, NO_SUBJECT, { stats: this.keys.stats, pending: this.keys.pending, groups: this.keys.groups });
    const groups = await Promise.all(
      reply.groups.map(async (group) => {
        const dead = await this.ctx.runner.run(eventsDead, NO_SUBJECT, { deadLetters: this.keys.deadLetters(group), action: 'count', id: '', letter: '' });
        return { group, deadLetters: dead.count };
      }),
    );
    return { dropped: reply.dropped, pendingSubjects: reply.pendingSubjects, groups: groups.sort((x, y) => (x.group < y.group ? -1 : 1)) };
  }

  private async group(action: 'join' | 'leave', group: string): Promise<string[]> {
    const reply = await this.ctx.runner.run(eventsGroup, NO_SUBJECT, { groups: this.keys.groups, deadLetters: this.keys.deadLetters(group), action, group });
    return reply.groups;
  }

  /**
   * Delivers one subject's events to the group until it has none to give now; takes the
   * subject out of the index once no group needs its outbox.
   */
  private async drain(subject: string, score: string, consumer: string, groups: string[], o: ReturnType<typeof consumeArgs>): Promise<void> {
    const redisKeys = this.ctx.redisKeys(subject);
    for (;;) {
      const read = await this.ctx.runner.run(readEvents, redisKeys, { group: o.group, consumer, count: o.batchSize, retryMs: o.retryMs });
      const handled: string[] = [];
      for (const e of read.events) {
        const event: DeliveredEvent = {
          id: eventId(subject, e.id),
          type: e.type,
          subject,
          at: Number(e.at),
          data: JSON.parse(e.data),
          attempt: e.attempts,
        } as DeliveredEvent;
        if (e.attempts > o.maxAttempts) {
          const { attempt: _attempt, ...stored } = event;
          const letter: DeadLetter = { event: stored as TollgateEvent, attempts: e.attempts - 1, deadAt: this.ctx.localNow() };
          await this.ctx.runner.run(eventsDead, NO_SUBJECT, {
            deadLetters: this.keys.deadLetters(o.group),
            action: 'put',
            id: event.id,
            letter: JSON.stringify(letter),
          });
          handled.push(e.entry);
          continue;
        }
        if (o.signal?.aborted) break;
        try {
          await o.handler(event);
          handled.push(e.entry);
        } catch {
          // Not acknowledged: delivered again after retryMs.
        }
      }
      const acked = await this.ctx.runner.run(ackEvents, redisKeys, { group: o.group, groups: groups.join(','), ids: handled.join(',') });
      if (acked.length === 0) {
        await this.ctx.runner.run(eventsForget, NO_SUBJECT, { pending: this.keys.pending, subject, seenScore: score });
        return;
      }
      if (read.events.length < o.batchSize || o.signal?.aborted) return;
    }
  }

  /** Notes in the index every subject whose outbox has events, on every server. */
  private async scanOutboxes(): Promise<void> {
    const probe = this.ctx.redisKeys('x').outbox;
    const [head, tail] = [probe.slice(0, probe.indexOf('{x}')), probe.slice(probe.indexOf('{x}') + 3)];
    const keys = await scanAll(this.ctx.runner, `${globEscape(head)}{*}${globEscape(tail)}`);
    for (const key of keys) {
      if (!key.startsWith(`${head}{`) || !key.endsWith(`}${tail}`)) continue;
      const subject = key.slice(head.length + 1, key.length - tail.length - 1);
      await this.ctx.runner.run(eventsNotify, NO_SUBJECT, { pending: this.keys.pending, stats: this.keys.stats, subject, dropped: 0 });
    }
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
