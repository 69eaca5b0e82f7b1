// The account hash's extras field (lib/account.lua, docs/grants.md#storage): written early in
// every new account's hash, '' until the account has grants or events, then their summary, so
// the hot scripts learn in one short lookup that there is nothing more to read. What Redis
// stores: memory has no hash to read. Through both clients.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRecordingTollgate, type RecordingGate } from './helpers/recording.ts';
import { CLIENT_KINDS, TEST_START, newAccount } from './helpers/tollgate.ts';

/** HGETALL as a flat list (node-redis may answer with an object). */
const flat = (reply: unknown): string[] => (Array.isArray(reply) ? (reply as string[]) : Object.entries(reply as Record<string, string>).flat());

describe.each(CLIENT_KINDS)('the extras field on %s', (kind) => {
  let gate: RecordingGate;
  beforeAll(async () => {
    gate = await openRecordingTollgate(kind, 'extras');
    gate.clock.set(TEST_START);
  });
  afterAll(() => gate.close());

  const fields = async (id: string) => flat(await gate.command(['HGETALL', `${gate.prefix}:{${id}}:a`]));
  const extras = async (id: string) => {
    const list = await fields(id);
    return list[list.indexOf('x') + 1];
  };

  it('a new account holds it empty, before its credits, so a lookup of the balance passes it', async () => {
    const id = await newAccount(gate.tg, 'free');
    const names = (await fields(id)).filter((_, i) => i % 2 === 0);
    expect(names.indexOf('x')).toBeGreaterThan(-1);
    expect(names.indexOf('x')).toBeLessThan(names.indexOf('b'));
    expect(await extras(id)).toBe('');
  });

  it("follows the grants' sum, next roll and front source, and the events, and empties once neither is left", async () => {
    const id = await newAccount(gate.tg, 'free');
    const expiresAt = TEST_START + 86_400_000;
    const granted = await gate.tg.credits.grant(id, { amount: 40, priority: 10, expiresAt, operationId: 'extras-1' });
    if (!granted.ok) throw new Error('grant refused');
    expect(await extras(id)).toBe(`40 ${expiresAt} 1`);
    await gate.tg.credits.charge(id, { required: 15 });
    expect(await extras(id)).toBe(`25 ${expiresAt} 1`);
    await gate.tg.accounts.setThresholds(id, [{ below: 5 }]);
    expect(await extras(id)).toBe(`25 ${expiresAt} 1 e`);
    await gate.tg.credits.voidGrant(id, granted.grantId, { operationId: 'extras-2' });
    expect(await extras(id)).toBe('e');
    await gate.tg.accounts.setThresholds(id, null);
    expect(await extras(id)).toBe('');
  });
});
