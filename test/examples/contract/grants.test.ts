// Credits beyond the plan's allowance, over real HTTP against both example servers: the back
// office grants (a top-up pack, a promotion that expires), voids, adjusts and refunds a charge
// named by its request id; GET /api/v1/usage shows what is available and the sources in the
// order they are spent; every bad body is a 4xx in the error body, never a 5xx.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADAPTERS, ADMIN_TOKEN, type Harness, type Reply, startHarness } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';
const DAY = 86_400_000;

describe.each(ADAPTERS)('$name server: grants, adjustments and refunds', (adapter) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(adapter, 'grants');
  });
  afterAll(async () => {
    await h?.close();
  });

  const grant = (id: string, body: Record<string, unknown>) => h.admin(`/admin/accounts/${id}/grants`, body);
  const usage = async (key: string) => (await h.request('/api/v1/usage', { key })).body;
  const listed = async (id: string, query = '') =>
    (await h.request(`/admin/accounts/${id}/grants${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).body.grants as Array<
      Record<string, unknown>
    >;
  const source = async (key: string, grantId: string) => (await usage(key)).grants.find((g: { grant_id: string }) => g.grant_id === grantId);
  const iso = (ms: number) => new Date(ms).toISOString();
  /** A 4xx in the example's error body, with the request id in its header. */
  const refused = (reply: Reply, status: number, type: string) => {
    expect(reply.status, reply.text).toBe(status);
    expect(reply.body.error.type).toBe(type);
    expect(reply.body.error.message).toEqual(expect.any(String));
    expect(reply.body.request_id).toBe(reply.headers.get('x-request-id'));
  };

  it('a top-up pack and a promotion that expires: usage shows what is available, the next expiry and the sources in spend order', async () => {
    const { id, key } = await h.account('starter');
    const topUp = await grant(id, { amount: 10_000, kind: 'paid', reason: 'Top-up pack', operation_id: 'order_1001' });
    expect(topUp.status).toBe(201);
    expect(topUp.body).toMatchObject({
      account_id: id,
      grant_id: 'g1',
      operation_id: 'order_1001',
      replayed: false,
      grant: { grant_id: 'g1', kind: 'paid', status: 'active', priority: 50, amount: 10_000, remaining: 10_000, expires_at: null, reason: 'Top-up pack' },
    });
    // The same operation id again is the same grant, not a second one.
    const again = await grant(id, { amount: 10_000, kind: 'paid', reason: 'Top-up pack', operation_id: 'order_1001' });
    expect(again.body).toMatchObject({ grant_id: 'g1', replayed: true });

    const promoEnds = iso(h.clock.now + 7 * DAY);
    const promo = await grant(id, { amount: 100, kind: 'promotional', expires_at: promoEnds, reason: 'Welcome offer' });
    expect(promo.status).toBe(201);
    // Without an operation_id the movement is keyed by this request's id, answered back for a retry.
    expect(promo.body).toMatchObject({ grant_id: 'g2', operation_id: promo.headers.get('x-request-id'), grant: { expires_at: promoEnds } });

    const body = await usage(key);
    // Every field the usage body had is still there; available and next_expiry are added.
    expect(body).toMatchObject({ plan: 'starter', cycle: { id: 1 }, rate_limit: { limit: 100 }, jobs: { active: 0, cap: 2 } });
    expect(body.credits).toEqual({
      allowance: 1000,
      balance: 1000,
      spent: 0,
      held: 0,
      available: 11_100,
      next_expiry: { grant_id: 'g2', expires_at: promoEnds, amount: 100 },
    });
    // The promotion expires first, then the cycle (15 Feb), then the paid pack, which never expires.
    expect(body.grants.map((g: { grant_id: string }) => g.grant_id)).toEqual(['g2', 'cycle:1', 'g1']);
    expect(body.grants[1]).toMatchObject({ kind: 'plan', expires_at: body.cycle.end, remaining: 1000 });

    // A charge draws from the first source: the promotion, not the cycle.
    expect((await h.request(`/transcript/${VIDEO}`, { key })).status).toBe(200);
    expect(await source(key, 'g2')).toMatchObject({ remaining: 99, spent: 1, status: 'active' });
    expect((await usage(key)).credits).toMatchObject({ balance: 1000, available: 11_099 });

    // A lower priority is spent before anything else, whatever it expires.
    await grant(id, { amount: 1, kind: 'paid', priority: 10, operation_id: 'order_1002' });
    expect((await usage(key)).grants.map((g: { grant_id: string }) => g.grant_id)).toEqual(['g3', 'g2', 'cycle:1', 'g1']);
    expect((await h.request(`/api/v1/comments/${VIDEO}`, { key })).headers.get('x-credits-charged')).toBe('1');
    expect(await source(key, 'g3')).toMatchObject({ remaining: 0, spent: 1, status: 'used' });
  });

  it('a promotion expires at its expires_at: what is left leaves available; the admin list with ended=true shows it expired', async () => {
    const { id, key } = await h.account('starter');
    const ends = h.clock.now + 2 * DAY;
    await grant(id, { amount: 40, kind: 'promotional', expires_at: ends, reason: 'Spring promo' });
    expect((await h.request(`/transcript/${VIDEO}`, { key })).status).toBe(200);
    expect((await usage(key)).credits.available).toBe(1039);
    h.clock.now = ends;
    const after = await usage(key);
    expect(after.credits).toMatchObject({ balance: 1000, available: 1000, next_expiry: null });
    expect(after.grants.map((g: { grant_id: string }) => g.grant_id)).toEqual(['cycle:1']);
    expect(await listed(id)).toHaveLength(1);
    expect((await listed(id, '?ended=true')).find((g) => g.grant_id === 'g1')).toMatchObject({
      status: 'expired',
      amount: 40,
      remaining: 0,
      spent: 1,
      expired: 39,
      ended_at: iso(ends),
    });
  });

  it('a pending grant counts from its effective_at on; it is listed after the live sources until then', async () => {
    const { id, key } = await h.account('starter');
    const starts = h.clock.now + DAY;
    const pending = await grant(id, { amount: 25, kind: 'promotional', effective_at: starts, expires_at: starts + 10 * DAY });
    expect(pending.body.grant).toMatchObject({ status: 'pending', effective_at: iso(starts) });
    const before = await usage(key);
    expect(before.credits.available).toBe(1000);
    expect(before.grants.map((g: { grant_id: string; status: string }) => [g.grant_id, g.status])).toEqual([
      ['cycle:1', 'active'],
      ['g1', 'pending'],
    ]);
    h.clock.now = starts;
    const after = await usage(key);
    expect(after.credits.available).toBe(1025);
    expect(after.grants.map((g: { grant_id: string; status: string }) => [g.grant_id, g.status])).toEqual([
      ['g1', 'active'],
      ['cycle:1', 'active'],
    ]);
  });

  it('the credit pre-check and the 402 count every grant: a paid grant serves an account whose cycle is spent', async () => {
    const { id, key } = await h.account('starter');
    await h.leave(id, 0);
    expect((await h.request(`/transcript/${VIDEO}`, { key })).status).toBe(402);
    await grant(id, { amount: 1, operation_id: 'pack_1' });
    const paid = await h.request(`/transcript/${VIDEO}`, { key });
    expect(paid.status).toBe(200);
    expect(paid.headers.get('x-credits-charged')).toBe('1');
    const short = await h.request(`/transcript/${VIDEO}`, { key });
    refused(short, 402, 'insufficient_quota');
    expect(short.body.error).toMatchObject({ remaining: 0, needed: 1 });
  });

  describe('refunds by request id', () => {
    it('a transcript refunded by the X-Request-Id of its reply: back to the source that paid, once', async () => {
      const { id, key } = await h.account('starter');
      await grant(id, { amount: 10, kind: 'promotional', expires_at: h.clock.now + 7 * DAY, operation_id: 'promo' });
      const charged = await h.request(`/transcript/${VIDEO}`, { key });
      const requestId = charged.headers.get('x-request-id')!;
      expect(await source(key, 'g1')).toMatchObject({ remaining: 9 });

      const refund = await h.admin(`/admin/accounts/${id}/refunds`, { request_id: requestId, reason: 'Transcript was garbled', operation_id: 'ticket_77' });
      expect(refund.status).toBe(200);
      expect(refund.body).toEqual({
        account_id: id,
        request_id: requestId,
        refunded: 1,
        sources: [{ grant_id: 'g1', amount: 1 }],
        operation_id: 'ticket_77',
        replayed: false,
      });
      expect(await source(key, 'g1')).toMatchObject({ remaining: 10, spent: 0 });
      // The same refund again is a replay; another refund of it finds nothing left.
      const replay = await h.admin(`/admin/accounts/${id}/refunds`, { request_id: requestId, reason: 'Transcript was garbled', operation_id: 'ticket_77' });
      expect(replay.body).toMatchObject({ refunded: 1, replayed: true });
      const twice = await h.admin(`/admin/accounts/${id}/refunds`, { request_id: requestId });
      refused(twice, 409, 'exceeds_charge');
      expect(twice.body.error.param).toBe('amount');
      expect((await usage(key)).credits.available).toBe(1010);
    });

    it('part of a charge, then the rest; never more than it took', async () => {
      const { id, key } = await h.account('starter');
      // A charge of 5 with an operation id, as the service's handlers make them (their request id).
      await h.service.tollgate.credits.charge(id, { required: 5, operationId: 'req_bulk_export' });
      const refund = (body: Record<string, unknown>) => h.admin(`/admin/accounts/${id}/refunds`, { request_id: 'req_bulk_export', ...body });
      expect((await refund({ amount: 2 })).body).toMatchObject({ refunded: 2, sources: [{ grant_id: 'cycle:1', amount: 2 }] });
      refused(await refund({ amount: 4 }), 409, 'exceeds_charge');
      expect((await refund({})).body).toMatchObject({ refunded: 3 });
      refused(await refund({}), 409, 'exceeds_charge');
      expect((await usage(key)).credits).toMatchObject({ balance: 1000, spent: 0 });
    });

    it("an unknown request id, a free request's and another account's charge are 404 not_found", async () => {
      const { id, key } = await h.account('starter');
      const other = await h.account('starter');
      const free = await h.request('/api/v1/search?q=x', { key });
      const theirs = await h.request(`/transcript/${VIDEO}`, { key: other.key });
      for (const requestId of ['req_nothing_here', free.headers.get('x-request-id')!, theirs.headers.get('x-request-id')!]) {
        const reply = await h.admin(`/admin/accounts/${id}/refunds`, { request_id: requestId });
        refused(reply, 404, 'not_found');
        expect(reply.body.error.param).toBe('request_id');
      }
      expect((await h.service.tollgate.usage(other.id)).credits.balance).toBe(999);
    });

    it('a refund to a promotion that has expired is recorded on it and raises nothing available', async () => {
      const { id, key } = await h.account('starter');
      const ends = h.clock.now + DAY;
      await grant(id, { amount: 10, kind: 'promotional', expires_at: ends });
      const requestId = (await h.request(`/transcript/${VIDEO}`, { key })).headers.get('x-request-id')!;
      h.clock.now = ends + 1;
      const refund = await h.admin(`/admin/accounts/${id}/refunds`, { request_id: requestId });
      expect(refund.body).toMatchObject({ refunded: 1, sources: [{ grant_id: 'g1', amount: 1 }] });
      expect((await usage(key)).credits.available).toBe(1000);
      expect((await listed(id, '?ended=true')).find((g) => g.grant_id === 'g1')).toMatchObject({
        status: 'expired',
        expired: 9,
        spent: 0,
        refunded_after_end: 1,
      });
    });
  });

  it('void: what is left of a grant is voided once; an unknown grant is 404, a cycle cannot be voided', async () => {
    const { id, key } = await h.account('starter');
    await grant(id, { amount: 500, operation_id: 'order_9' });
    await grant(id, { amount: 1, priority: 0, operation_id: 'order_10' });
    await h.request(`/transcript/${VIDEO}`, { key });
    await h.request(`/transcript/${VIDEO}`, { key });
    const voided = await h.admin(`/admin/accounts/${id}/grants/g1/void`, { reason: 'Chargeback', operation_id: 'chargeback_9' });
    expect(voided.status).toBe(200);
    expect(voided.body).toEqual({ account_id: id, grant_id: 'g1', operation_id: 'chargeback_9', voided: 500, replayed: false });
    expect((await h.admin(`/admin/accounts/${id}/grants/g1/void`, { reason: 'Chargeback', operation_id: 'chargeback_9' })).body).toMatchObject({
      voided: 500,
      replayed: true,
    });
    expect((await h.admin(`/admin/accounts/${id}/grants/g1/void`, {})).body).toMatchObject({ voided: 0, replayed: false });
    expect((await usage(key)).credits.available).toBe(999);
    expect((await listed(id, '?ended=true')).find((g) => g.grant_id === 'g1')).toMatchObject({ status: 'voided', voided: 500, remaining: 0 });

    const unknown = await h.admin(`/admin/accounts/${id}/grants/g99/void`, {});
    refused(unknown, 404, 'not_found');
    expect(unknown.body.error.message).toContain('g99');
    refused(await h.admin(`/admin/accounts/${id}/grants/cycle:1/void`, {}), 400, 'invalid_request');
    refused(await h.admin(`/admin/accounts/${id}/grants/nonsense/void`, {}), 400, 'invalid_request');
  });

  it('adjust: +n adds an adjustment grant without expiry, -n takes n in spend order, refused whole when less is available', async () => {
    const { id, key } = await h.account('free');
    const plus = await h.admin(`/admin/accounts/${id}/adjustments`, { amount: 50, reason: 'Goodwill after the outage' });
    expect(plus.status).toBe(200);
    expect(plus.body).toMatchObject({ account_id: id, amount: 50, grant_id: 'g1', sources: [{ grant_id: 'g1', amount: 50 }], available: 80, replayed: false });
    expect(await source(key, 'g1')).toMatchObject({ kind: 'adjustment', expires_at: null, reason: 'Goodwill after the outage' });
    // Same priority; the cycle expires and the adjustment never does, so the cycle is spent first.
    const minus = await h.admin(`/admin/accounts/${id}/adjustments`, { amount: -35, reason: 'Duplicate credit', operation_id: 'fix_1' });
    expect(minus.body).toMatchObject({
      amount: -35,
      grant_id: null,
      sources: [
        { grant_id: 'cycle:1', amount: 30 },
        { grant_id: 'g1', amount: 5 },
      ],
      available: 45,
    });
    const tooMuch = await h.admin(`/admin/accounts/${id}/adjustments`, { amount: -46, reason: 'Too much' });
    refused(tooMuch, 402, 'insufficient_quota');
    expect(tooMuch.body.error).toMatchObject({ remaining: 45, needed: 46 });
    expect((await usage(key)).credits.available).toBe(45);
  });

  it('a subject holds at most 16 live or pending grants: the next is 409 grant_limit_reached', async () => {
    const { id } = await h.account('starter');
    for (let i = 0; i < 16; i++) expect((await grant(id, { amount: 1, operation_id: `pack_${i}` })).status).toBe(201);
    refused(await grant(id, { amount: 1, operation_id: 'pack_16' }), 409, 'grant_limit_reached');
  });

  it('random credit requests, well formed or not: never a 5xx, errors in the error body, available is what the live sources have left', async () => {
    const { id, key } = await h.account('starter');
    const charges: string[] = [];
    for (let i = 0; i < 3; i++) charges.push((await h.request(`/transcript/${VIDEO}`, { key })).headers.get('x-request-id')!);
    const junk = fc.oneof(fc.string({ maxLength: 8 }), fc.integer({ min: -3, max: 3 }), fc.double(), fc.boolean(), fc.constant(null), fc.constant([1]));
    const instant = fc.oneof(
      fc.integer({ min: -2 * DAY, max: 40 * DAY }).map((offset) => iso(h.clock.now + offset)),
      fc.integer({ min: -DAY, max: 40 * DAY }).map((offset) => h.clock.now + offset),
      junk,
    );
    const amount = fc.oneof(fc.integer({ min: -60, max: 60 }), junk);
    const opId = fc.option(fc.constantFrom('op_a', 'op_b', 'op_c'), { nil: undefined });
    const move = fc.oneof(
      fc
        .record(
          {
            amount,
            kind: fc.oneof(fc.constantFrom('paid', 'promotional', 'adjustment'), junk),
            priority: fc.oneof(fc.integer({ min: 0, max: 60 }), junk),
            effective_at: instant,
            expires_at: instant,
            reason: fc.string({ maxLength: 12 }),
            operation_id: opId,
          },
          { requiredKeys: [] },
        )
        .map((body) => ({ route: 'grants', body })),
      fc
        .record(
          { grant: fc.constantFrom('g1', 'g2', 'g3', 'cycle:1', 'x'), reason: fc.string({ maxLength: 12 }), operation_id: opId },
          { requiredKeys: ['grant'] },
        )
        .map(({ grant, ...body }) => ({ route: `grants/${grant}/void`, body })),
      fc
        .record({ amount, reason: fc.oneof(fc.string({ maxLength: 12 }), junk), operation_id: opId }, { requiredKeys: [] })
        .map((body) => ({ route: 'adjustments', body })),
      fc.record({ charge: fc.integer({ min: 0, max: 3 }), amount: fc.option(amount, { nil: undefined }), operation_id: opId }).map(({ charge, ...body }) => ({
        route: 'refunds',
        body: { ...body, request_id: charges[charge] ?? 'req_none' },
      })),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(move, fc.integer({ min: 0, max: 3 * DAY })), { minLength: 1, maxLength: 6 }), async (moves) => {
        for (const [{ route, body }, later] of moves) {
          const reply = await h.admin(`/admin/accounts/${id}/${route}`, body);
          expect(reply.status, reply.text).toBeLessThan(500);
          if (reply.status >= 400)
            expect(reply.body).toMatchObject({ error: { type: expect.any(String), message: expect.any(String) }, request_id: expect.any(String) });
          h.clock.advance(later);
        }
        const { credits, grants } = await usage(key);
        const live = grants.filter((g: { status: string }) => g.status === 'active' || g.status === 'used');
        expect(credits.available).toBe(live.reduce((sum: number, g: { remaining: number }) => sum + g.remaining, 0));
        for (const g of grants) {
          expect(g.remaining + g.spent + g.held + g.expired + g.voided + g.refunded_after_end, g.grant_id).toBe(g.amount);
        }
      }),
      { numRuns: 25 },
    );
  });

  describe('bad input is a 4xx in the error body, never a 5xx', () => {
    it.each([
      ['no amount', 'grants', {}, 'amount'],
      ['amount 0', 'grants', { amount: 0 }, 'amount'],
      ['a fractional amount', 'grants', { amount: 1.5 }, 'amount'],
      ['amount as text', 'grants', { amount: '10' }, 'amount'],
      ['an unknown kind', 'grants', { amount: 1, kind: 'gift' }, 'kind'],
      ['a negative priority', 'grants', { amount: 1, priority: -1 }, 'priority'],
      ['priority above 1000', 'grants', { amount: 1, priority: 1001 }, 'priority'],
      ['an expiry that is no date', 'grants', { amount: 1, expires_at: 'next week' }, 'expires_at'],
      ['an expiry before the start', 'grants', { amount: 1, effective_at: '2026-03-01T00:00:00Z', expires_at: '2026-02-01T00:00:00Z' }, 'expires_at'],
      ['a mistyped field', 'grants', { amount: 1, expires: '2026-03-01' }, 'expires'],
      ['a reason that is too long', 'grants', { amount: 1, reason: 'x'.repeat(201) }, 'reason'],
      ['an operation id with a space', 'grants', { amount: 1, operation_id: 'a b' }, 'operation_id'],
      ['adjust by 0', 'adjustments', { amount: 0, reason: 'x' }, 'amount'],
      ['adjust without a reason', 'adjustments', { amount: 5 }, 'reason'],
      ['refund without a request id', 'refunds', {}, 'request_id'],
      ['refund of 0', 'refunds', { request_id: 'req_1', amount: 0 }, 'amount'],
      ['void with an unknown field', 'grants/g1/void', { amount: 1 }, 'amount'],
    ])('%s', async (_name, route, body, param) => {
      const { id } = await h.account('starter');
      const reply = await h.admin(`/admin/accounts/${id}/${route}`, body);
      refused(reply, 400, 'invalid_request');
      expect(reply.body.error.param).toBe(param);
    });

    it('what only tollgate can check is a 400 too: an expiry already past, an operation id reused with other terms', async () => {
      const { id } = await h.account('starter');
      refused(await grant(id, { amount: 1, expires_at: iso(h.clock.now - 1) }), 400, 'invalid_request');
      expect((await grant(id, { amount: 5, operation_id: 'order_1' })).status).toBe(201);
      refused(await grant(id, { amount: 6, operation_id: 'order_1' }), 400, 'invalid_request');
      expect((await listed(id)).map((g) => g.grant_id)).toEqual(['cycle:1', 'g1']);
    });

    it('a body that is not a JSON object, an unknown account, ended=maybe, and no admin token', async () => {
      const { id } = await h.account('starter');
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
      refused(await h.request(`/admin/accounts/${id}/grants`, { method: 'POST', raw: '[1]', headers: admin }), 400, 'invalid_request');
      refused(await h.request(`/admin/accounts/${id}/grants`, { method: 'POST', raw: '{"amount":', headers: admin }), 400, 'invalid_request');
      refused(await grant('acct_nobody', { amount: 1 }), 404, 'not_found');
      refused(await h.admin('/admin/accounts/acct_nobody/refunds', { request_id: 'req_1' }), 404, 'not_found');
      refused(await h.request(`/admin/accounts/${id}/grants?ended=maybe`, { headers: admin }), 400, 'invalid_request');
      refused(await h.request(`/admin/accounts/acct_nobody/grants`, { headers: admin }), 404, 'not_found');
      refused(await h.request(`/admin/accounts/${id}/grants`, { method: 'POST', body: { amount: 1 } }), 401, 'unauthorized');
      expect(await listed(id)).toHaveLength(1);
    });
  });
});
