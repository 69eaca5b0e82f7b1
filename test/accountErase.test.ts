// accounts.list and accounts.delete (docs/accounts.md, "Listing and erasing"): a page at a
// time over every server (each master of a cluster), and an erasure that removes every key of
// a subject, refused while holds are open unless forced. On both clients and memory.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../src/errors.ts';
import { backends, newAccount, openTollgate, type TestGate } from './helpers/tollgate.ts';

const POLICIES = { perIp: { api: [{ limit: 5, windowMs: 60_000 }] } };

describe.each(backends())('accounts.list and accounts.delete through %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'erase', { policies: POLICIES });
  });
  afterAll(() => gate.close());

  async function everyPage(count: number): Promise<string[]> {
    const seen: string[] = [];
    let cursor: string | null | undefined;
    let pages = 0;
    do {
      const page = await gate.tg.accounts.list({ cursor, count });
      expect(page.subjects.length).toBeLessThanOrEqual(count * 10);
      seen.push(...page.subjects);
      cursor = page.cursor;
      pages += 1;
    } while (cursor !== null && pages < 1000);
    return seen;
  }

  it('lists every account once, page by page, and only accounts', async () => {
    const made: string[] = [];
    for (let i = 0; i < 25; i++) made.push(await newAccount(gate.tg, 'starter'));
    await gate.tg.limits.admit('ip:10.1.2.3', { policy: 'perIp' });
    const seen = await everyPage(7);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of made) expect(seen).toContain(id);
    expect(seen).not.toContain('ip:10.1.2.3');
    expect(new Set(await everyPage(1000))).toEqual(new Set(seen));
  });

  it('delete removes every key of the subject: account, keys, counts, Idempotency-Keys, holds', async () => {
    const id = await newAccount(gate.tg, 'pro');
    const other = await newAccount(gate.tg, 'pro');
    const { key } = await gate.tg.keys.issue(id);
    await gate.tg.keys.verify(key);
    await gate.tg.limits.admit(id, { policy: 'perIp' });
    await gate.tg.credits.charge(id, { required: 1 });
    await gate.tg.idempotency.begin(id, 'idem-1', { a: 1 });
    const hold = await gate.tg.holds.open(id, { items: 2, perItem: { required: 1 } });
    expect(hold.ok).toBe(true);
    if (hold.ok) await gate.tg.holds.cancel(id, hold.hold.id);
    expect(await gate.tg.accounts.delete(id)).toEqual({ ok: true });
    await expect(gate.tg.accounts.inspect(id)).rejects.toThrow(/no account|not found/i);
    expect(await gate.tg.keys.verify(key)).toEqual({ ok: false, valid: false, reason: 'unknown' });
    expect(await gate.tg.limits.peek(id, { policy: 'perIp' })).toMatchObject({ rateLimit: { remaining: 5 } });
    expect(await gate.tg.idempotency.begin(id, 'idem-1', { a: 2 })).toMatchObject({ state: 'new' });
    if (gate.onRedis) {
      const left = (await gate.command(['KEYS', `${gate.prefix}*{${id}}*`])) as string[];
      // Only the Idempotency-Key just claimed again.
      expect(left.length).toBe(1);
    }
    expect(await gate.tg.accounts.inspect(other)).toMatchObject({ plan: { name: 'pro' } });
    expect((await everyPage(1000)).includes(id)).toBe(false);
    // Erasing again finds nothing and says so the same way.
    expect(await gate.tg.accounts.delete(id)).toEqual({ ok: true });
  });

  it('is refused while a hold is open, unless forced', async () => {
    const id = await newAccount(gate.tg, 'pro');
    const hold = await gate.tg.holds.open(id, { items: 1, perItem: { required: 1 } });
    expect(hold.ok).toBe(true);
    expect(await gate.tg.accounts.delete(id)).toEqual({ ok: false, reason: 'holds_open' });
    expect(await gate.tg.accounts.inspect(id)).toMatchObject({ credits: { held: 1 } });
    expect(await gate.tg.accounts.delete(id, { force: true })).toEqual({ ok: true });
    await expect(gate.tg.accounts.inspect(id)).rejects.toThrow();
  });

  it('bad input is a typed error', async () => {
    await expect(gate.tg.accounts.list({ count: 0 })).rejects.toThrow(InvalidInputError);
    await expect(gate.tg.accounts.list({ cursor: 'nonsense' })).rejects.toThrow(InvalidInputError);
    await expect(gate.tg.accounts.delete('bad subject!')).rejects.toThrow(InvalidInputError);
  });
});
