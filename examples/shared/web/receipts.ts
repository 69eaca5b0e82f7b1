/**
 * Transcripts fetched on the website, kept for a day so that the page showing one and its
 * download serve what was paid for without charging again (the fetch is a POST that redirects
 * to them, so a reload never pays twice). Each is stored under its account: another account's
 * receipt id finds nothing.
 */
import { randomBytes } from 'node:crypto';
import type { AppRedis } from '../redis/client.ts';

const TTL_S = 24 * 3600;
const RECEIPT_ID = /^tr_[A-Za-z0-9_-]{16}$/;

export interface Receipt {
  videoId: string;
  format: string;
  contentType: string;
  /** The transcript as delivered in its format (JSON pretty-printed). */
  body: string;
  charged: number;
  at: number;
}

export class TranscriptReceipts {
  constructor(
    private readonly redis: AppRedis,
    private readonly prefix: string,
  ) {}

  async save(accountId: string, receipt: Receipt): Promise<string> {
    const id = `tr_${randomBytes(12).toString('base64url')}`;
    await this.redis.set(this.key(accountId, id), JSON.stringify(receipt), { EX: TTL_S });
    return id;
  }

  async get(accountId: string, id: string): Promise<Receipt | null> {
    if (!RECEIPT_ID.test(id)) return null;
    const raw = await this.redis.get(this.key(accountId, id));
    return typeof raw === 'string' ? (JSON.parse(raw) as Receipt) : null;
  }

  private key(accountId: string, id: string): string {
    return `${this.prefix}:transcript:${accountId}:${id}`;
  }
}
