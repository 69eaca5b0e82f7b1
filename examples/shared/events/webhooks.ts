/**
 * Webhooks (docs/example-service.md#webhooks): tollgate's events, delivered to WEBHOOK_URL and
 * signed per the Standard Webhooks spec (`webhook-id`, `webhook-timestamp`, `webhook-signature`,
 * the `standardwebhooks` package), by one consumer group.
 *
 * Retries come in two layers. A delivery that fails (a network error, a timeout or a non-2xx
 * answer) is tried again here after short pauses, for a receiver's blip; when those fail too the
 * handler throws, and tollgate redelivers the event after `retryMs` with its `attempt` count, to
 * this server or any other running the group, even after this process died. After
 * `maxAttempts` it is a dead letter (`tollgate.events.deadLetters({ group: "webhooks" })`).
 * Every try of one event carries the same `webhook-id` (the event's id), so a receiver drops
 * what it has seen: delivery is at least once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import type { DeliveredEvent, Tollgate, TollgateEvent } from 'tollgate';

/** The consumer group every server of the example shares: each event is sent by one of them. */
export const WEBHOOK_GROUP = 'webhooks';

export interface WebhookOptions {
  /** Where to POST each event (WEBHOOK_URL). */
  url: string;
  /** The signing secret, `whsec_` and 24-64 bytes in base64 (WEBHOOK_SECRET). */
  secret: string;
  /** Pauses between the tries of one delivery before it is left to tollgate. Default 500 and 2,000 ms: three tries. */
  retryDelaysMs?: number[];
  /** How long one try may take. Default 5,000 ms. */
  timeoutMs?: number;
  /** tollgate's redelivery delay after the tries failed (consume's retryMs). Default tollgate's, 30 s. */
  retryMs?: number;
  /** Deliveries before an event becomes a dead letter (consume's maxAttempts). Default tollgate's, 10. */
  maxAttempts?: number;
  /** Told of each delivery whose tries all failed (it goes back to tollgate). Default: a line on stderr. */
  onFailure?: (event: DeliveredEvent, error: unknown) => void;
}

const DEFAULT_RETRY_DELAYS_MS = [500, 2_000];
const DEFAULT_TIMEOUT_MS = 5_000;

/** The body a receiver gets: the Standard Webhooks shape, `{ type, timestamp, data }`, the subject inside data. */
export interface WebhookPayload {
  type: TollgateEvent['type'];
  /** When the event happened (the credit moved), ISO 8601. */
  timestamp: string;
  data: { subject: string } & Record<string, unknown>;
}

export function webhookPayload(event: TollgateEvent): WebhookPayload {
  return { type: event.type, timestamp: new Date(event.at).toISOString(), data: { subject: event.subject, ...event.data } };
}

/** The secret as the spec writes it, checked before anything is sent: a bad one fails start-up, not each delivery. */
export function webhookSigner(secret: string): Webhook {
  const problem = `WEBHOOK_SECRET must be whsec_ and 24-64 bytes in base64 (make one: node -e "console.log('whsec_' + require('crypto').randomBytes(32).toString('base64'))")`;
  if (!secret.startsWith('whsec_')) throw new Error(problem);
  const bytes = Buffer.from(secret.slice('whsec_'.length), 'base64');
  if (bytes.length < 24 || bytes.length > 64) throw new Error(problem);
  try {
    return new Webhook(secret);
  } catch {
    throw new Error(problem);
  }
}

function logFailure(event: DeliveredEvent, error: unknown): void {
  console.warn(
    `webhook ${event.id} (${event.type}, delivery ${event.attempt}) not delivered; tollgate delivers it again later:`,
    error instanceof Error ? error.message : error,
  );
}

/** Refuses a URL that is not http(s) and a secret that is not the spec's; the signer for the secret. */
export function checkWebhookOptions(options: WebhookOptions): Webhook {
  if (!URL.canParse(options.url) || !/^https?:$/.test(new URL(options.url).protocol)) {
    throw new Error(`WEBHOOK_URL must be an http(s) URL, got ${options.url}`);
  }
  return webhookSigner(options.secret);
}

/** One failed try: the receiver's status, or what went wrong on the way. */
export class WebhookDeliveryError extends Error {
  override readonly name = 'WebhookDeliveryError';
}

/**
 * Runs the consumer until stop(). One instance per server process; any number of processes may
 * run it (the group shares the work).
 */
export class WebhookSender {
  private readonly stopping = new AbortController();
  private running?: Promise<void>;
  private readonly signer: Webhook;

  constructor(
    private readonly tollgate: Tollgate,
    private readonly options: WebhookOptions,
  ) {
    this.signer = checkWebhookOptions(options);
  }

  start(): void {
    this.running ??= this.tollgate.events.consume({
      group: WEBHOOK_GROUP,
      handler: (event) =>
        this.deliver(event).catch((error: unknown) => {
          // Cut short by stop(): no failure of the receiver's, and the event is delivered again all the same.
          if (!this.stopping.signal.aborted) (this.options.onFailure ?? logFailure)(event, error);
          throw error;
        }),
      signal: this.stopping.signal,
      ...(this.options.retryMs === undefined ? {} : { retryMs: this.options.retryMs }),
      ...(this.options.maxAttempts === undefined ? {} : { maxAttempts: this.options.maxAttempts }),
    });
  }

  /**
   * Sends one event, trying again after each pause; throws when every try failed, so tollgate
   * redelivers it. Stopping cuts a try or a pause short: the event is left to the next
   * delivery, here or on another server.
   */
  async deliver(event: TollgateEvent): Promise<void> {
    const body = JSON.stringify(webhookPayload(event));
    const pauses = this.options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    for (let tried = 0; ; tried++) {
      try {
        await this.send(event.id, body);
        return;
      } catch (error) {
        if (tried >= pauses.length || this.stopping.signal.aborted) throw error;
      }
      await sleep(pauses[tried], undefined, { signal: this.stopping.signal });
    }
  }

  private async send(id: string, body: string): Promise<void> {
    // Signed at each try, with the time of sending: receivers refuse a timestamp more than 5
    // minutes off their clock, and a retry may come much later than the first try.
    const sentAt = new Date();
    const signal = AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS)]);
    let response: Response;
    try {
      response = await fetch(this.options.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': this.signer.sign(id, sentAt, body),
        },
        body,
        signal,
        redirect: 'manual',
      });
    } catch (error) {
      throw new WebhookDeliveryError(`webhook ${id}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    // The body is not read; dropping it frees the connection.
    await response.body?.cancel();
    if (response.status < 200 || response.status > 299) throw new WebhookDeliveryError(`webhook ${id}: the receiver answered ${response.status}`);
  }

  /** Stops taking events and waits for the consumer to end (consume resolves once its signal aborts). */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }
}
