// Bad input to the library throws a typed error with a clear message before Redis is touched
// (SPEC §8), and errors are recognisable across duplicate installs.
import { describe, expect, it } from 'vitest';
import { createTollgate, InvalidInputError, isTollgateError, StoreUnavailableError, TollgateError, UnknownPlanError, type RedisScriptClient } from '../src/index.ts';

/** A client that records calls: bad input must never reach it. */
function recordingClient() {
  const calls: string[] = [];
  const client: RedisScriptClient = {
    evalsha: async (sha) => void calls.push(sha),
    eval: async (src) => void calls.push(src.slice(0, 10)),
  };
  return { calls, client };
}

describe('bad input is refused before Redis is touched (SPEC §8)', () => {
  const { calls, client } = recordingClient();
  const tg = createTollgate({ redis: client });

  const cases: Array<[string, () => Promise<unknown>]> = [
    ['negative amount', () => tg.credits.charge('a', { required: -1 })],
    ['fractional amount', () => tg.credits.charge('a', { required: 1.5 })],
    ['NaN amount', () => tg.credits.charge('a', { required: Number.NaN })],
    ['infinite optional', () => tg.credits.charge('a', { required: 1, optional: Infinity })],
    ['a zero charge', () => tg.credits.charge('a', { required: 0, optional: 0 })],
    ['amount as a string', () => tg.credits.charge('a', { required: '1' as unknown as number })],
    ['empty account id', () => tg.limits.admit('')],
    ['account id with a brace (breaks the cluster hash tag)', () => tg.limits.admit('a{b}')],
    ['account id with a space', () => tg.usage('a b')],
    ['account id of 129 chars', () => tg.usage('a'.repeat(129))],
    ['unknown surface', () => tg.limits.admit('a', { surface: 'ftp' as 'api' })],
    ['negative pre-check', () => tg.limits.admit('a', { credits: -2 })],
    ['operation id over 255 chars', () => tg.credits.charge('a', { required: 1, operationId: 'x'.repeat(256) })],
    ['operation id with a control char', () => tg.credits.charge('a', { required: 1, operationId: 'a\nb' })],
    ['Idempotency-Key over 255 chars', () => tg.idempotency.begin('a', 'k'.repeat(256), {})],
    ['empty Idempotency-Key', () => tg.jobs.reserve('a', { videos: 1, idempotency: { key: '', body: {} } })],
    ['zero videos', () => tg.jobs.reserve('a', { videos: 0 })],
    ['fractional videos', () => tg.jobs.reserve('a', { videos: 2.5 })],
    ['collection limit 0', () => tg.jobs.reserveCollection('a', { limit: 0 })],
    ['collection limit 10,001', () => tg.jobs.reserveCollection('a', { limit: 10_001 })],
    ['bad job id', () => tg.jobs.cancel('a', '../x')],
    ['bad transcript result', () => tg.jobs.recordResult('a', 'job_1', { transcript: 'ok' as 'delivered' })],
    ['bad cycle interval', () => tg.accounts.startCycle('a', { every: { weeks: 2 } as unknown as { days: number } })],
    ['negative signup', () => tg.accounts.create('a', { plan: 'free', signupAt: -5 })],
  ];

  it.each(cases)('%s -> InvalidInputError', async (_, call) => {
    await expect(call()).rejects.toBeInstanceOf(InvalidInputError);
    expect(calls).toEqual([]);
  });

  it('unknown plan -> UnknownPlanError naming the known plans', async () => {
    await expect(tg.accounts.create('a', { plan: 'gold' })).rejects.toThrowError(new UnknownPlanError('gold', ['free', 'starter', 'pro', 'business']));
    await expect(tg.accounts.changePlan('a', 'gold')).rejects.toBeInstanceOf(UnknownPlanError);
    expect(calls).toEqual([]);
  });

  it('messages name the bad value', async () => {
    await expect(tg.credits.charge('a', { required: -1 })).rejects.toThrowError('required must be a whole number >= 0 (got -1)');
    await expect(tg.limits.admit('a{b}')).rejects.toThrowError(/Account id must be 1-128 characters.*"a\{b\}"/);
  });
});

describe('typed errors', () => {
  it('carry a stable name and code', () => {
    const e = new InvalidInputError('x');
    expect([e.name, e.code]).toEqual(['InvalidInputError', 'invalid_input']);
    expect(e).toBeInstanceOf(TollgateError);
    expect(new StoreUnavailableError('down')).toMatchObject({ name: 'StoreUnavailableError', code: 'unavailable' });
  });

  it('are recognised across duplicate installs by isTollgateError (brand, not instanceof)', () => {
    const foreign = Object.assign(new Error('x'), { code: 'unavailable', [Symbol.for('tollgate.error')]: true });
    expect(isTollgateError(foreign)).toBe(true);
    expect(isTollgateError(foreign, 'unavailable')).toBe(true);
    expect(isTollgateError(foreign, 'invalid_input')).toBe(false);
    expect(isTollgateError(new Error('x'))).toBe(false);
    expect(isTollgateError(null)).toBe(false);
  });
});
