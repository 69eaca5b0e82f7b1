// Bad input to the library throws a typed error with a clear message before Redis is touched
// (docs/errors.md): plans and policies at start-up (docs/concepts.md#plans), and every call's arguments. Errors
// are recognisable across duplicate installs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateError, createTollgate, isTollgateError, type Tollgate } from '../src/index.ts';
import { InvalidInputError, StoreUnavailableError, UnknownPlanError } from '../src/errors.ts';
import { validatePlans, validatePolicies } from '../src/rules/plans.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { recording, type Recorder } from './helpers/recording.ts';
import { CLIENT_KINDS, connectTestClient, type TestClient } from './helpers/tollgate.ts';

const DAY = 86_400_000;

/** A valid plan to spoil one field at a time. */
function goldPlan(): Record<string, any> {
  return {
    limits: { api: [{ limit: 10, windowMs: 60_000 }], web: [{ limit: 10, windowMs: 60_000 }] },
    credits: { allowance: 10, cycle: { days: 30 } },
    holds: { cap: 1, maxItems: 10, surfaces: ['api'] },
  };
}
const windows = (n: number) => Array.from({ length: n }, (_, i) => ({ limit: 10, windowMs: (i + 1) * 1000 }));

describe('plans are validated at start-up, with messages that name the plan and the field', () => {
  const cases: Array<[string, (p: Record<string, any>) => void, string | RegExp]> = [
    ['a surface with 0 windows', (p) => (p.limits.api = []), 'Plan "gold": limits.api must be a list of 1 to 4 windows'],
    ['a surface with 5 windows', (p) => (p.limits.api = windows(5)), 'Plan "gold": limits.api must be a list of 1 to 4 windows'],
    ['windows that are not a list', (p) => (p.limits.api = { limit: 10, windowMs: 60_000 }), 'Plan "gold": limits.api must be a list of 1 to 4 windows'],
    ['fractional seconds', (p) => (p.limits.api[0].windowMs = 1_500), 'Plan "gold": limits.api[0].windowMs must be whole seconds (got 1500)'],
    ['a window under 1 s', (p) => (p.limits.api[0].windowMs = 999), 'Plan "gold": limits.api[0].windowMs must be a whole number 1000..2678400000 (got 999)'],
    [
      'a window over 31 days',
      (p) => (p.limits.web[0].windowMs = 31 * DAY + 1_000),
      'Plan "gold": limits.web[0].windowMs must be a whole number 1000..2678400000 (got 2678401000)',
    ],
    ['a fractional windowMs', (p) => (p.limits.api[0].windowMs = 60_000.5), /^Plan "gold": limits\.api\[0\]\.windowMs must be a whole number/],
    [
      'two windows of the same windowMs',
      (p) =>
        (p.limits.api = [
          { limit: 5, windowMs: 60_000 },
          { limit: 10, windowMs: 60_000, algorithm: 'sliding' },
        ]),
      'Plan "gold": limits.api: two windows of one surface need different windowMs (60000 twice)',
    ],
    [
      'an unknown algorithm',
      (p) => (p.limits.api[0].algorithm = 'token_bucket'),
      'Plan "gold": limits.api[0].algorithm must be "fixed", "sliding" or "bucket" (got "token_bucket")',
    ],
    ['a limit of 0', (p) => (p.limits.api[0].limit = 0), 'Plan "gold": limits.api[0].limit must be a whole number 1..1000000000 (got 0)'],
    ['a fractional limit', (p) => (p.limits.web[0].limit = 2.5), 'Plan "gold": limits.web[0].limit must be a whole number 1..1000000000 (got 2.5)'],
    [
      'a window without a limit',
      (p) => (p.limits.api[0] = { windowMs: 60_000 }),
      'Plan "gold": limits.api[0].limit must be a whole number 1..1000000000 (got undefined)',
    ],
    [
      'a surface name in upper case',
      (p) => (p.limits = { API: p.limits.api }),
      'Plan "gold": limits: surface name must be 1-32 characters of a-z 0-9 _ - (got "API")',
    ],
    [
      'a surface name with a space',
      (p) => (p.limits = { 'my api': p.limits.api }),
      'Plan "gold": limits: surface name must be 1-32 characters of a-z 0-9 _ - (got "my api")',
    ],
    ['a surface name of 33 characters', (p) => (p.limits = { ['a'.repeat(33)]: p.limits.api }), /^Plan "gold": limits: surface name must be 1-32 characters/],
    ['no surfaces', (p) => (p.limits = {}), 'Plan "gold": limits must name at least one surface with its windows'],
    [
      'holds.surfaces not a subset of the surfaces',
      (p) => (p.holds.surfaces = ['api', 'mcp']),
      'Plan "gold": holds.surfaces: "mcp" is not one of the plan\'s surfaces (api, web)',
    ],
    ['holds.surfaces with a bad name', (p) => (p.holds.surfaces = ['Web']), /^Plan "gold": holds\.surfaces must be 1-32 characters/],
    ['holds.surfaces not a list', (p) => (p.holds.surfaces = 'api'), 'Plan "gold": holds.surfaces must be a list of the plan\'s surfaces'],
    ['holds missing', (p) => delete p.holds, 'Plan "gold": holds must be { cap, maxItems, surfaces }'],
    ['a fractional holds.cap', (p) => (p.holds.cap = 1.5), 'Plan "gold": holds.cap must be a whole number >= 0 (got 1.5)'],
    ['holds.maxItems of 0', (p) => (p.holds.maxItems = 0), 'Plan "gold": holds.maxItems must be a whole number >= 1 (got 0)'],
    ['credits missing', (p) => delete p.credits, 'Plan "gold": credits must be { allowance, cycle }'],
    ['a negative allowance', (p) => (p.credits.allowance = -1), 'Plan "gold": credits.allowance must be a whole number 0..99999999999999 (got -1)'],
    ['a cycle in weeks', (p) => (p.credits.cycle = { weeks: 2 }), /^Plan "gold": credits\.cycle: /],
  ];

  it.each(cases)('%s is refused by validatePlans and createTollgate, naming plan and field', (_, spoil, message) => {
    const plan = goldPlan();
    spoil(plan);
    const plans = { free: EXAMPLE_PLANS.free, gold: plan };
    expect(() => validatePlans(plans)).toThrowError(InvalidInputError);
    expect(() => validatePlans(plans)).toThrowError(message);
    const recorder = recording(undefined);
    expect(() => createTollgate({ redis: recorder.client, plans: plans as never })).toThrowError(message);
    expect(recorder.sent).toEqual([]);
  });

  it('a bad plan name or an empty table is refused', () => {
    expect(() => validatePlans({ 'gold plan': goldPlan() })).toThrowError('plan name "gold plan" must be 1-64 of A-Z a-z 0-9 _ . -');
    expect(() => validatePlans({})).toThrowError('The plan table must name at least one plan');
  });

  it('the bounds themselves are accepted: 1 to 4 windows, 1 s to 31 days, fixed or sliding; algorithm defaults to fixed', () => {
    const plan = goldPlan();
    plan.limits.api = [
      { limit: 1, windowMs: 1_000 },
      { limit: 10, windowMs: 60_000, algorithm: 'sliding' },
      { limit: 100, windowMs: DAY },
      { limit: 1_000_000_000, windowMs: 31 * DAY, algorithm: 'fixed' },
    ];
    plan.holds.surfaces = [];
    const checked = validatePlans({ gold: plan });
    expect(checked.gold!.limits.api!.map((w) => w.algorithm)).toEqual(['fixed', 'sliding', 'fixed', 'fixed']);
    expect(Object.isFrozen(checked.gold)).toBe(true);
  });
});

describe('policies are validated at start-up, naming the policy and field', () => {
  it.each<[string, unknown, string | RegExp]>([
    ['a bad window', { anonymous: { api: [{ limit: 10, windowMs: 1_500 }] } }, 'Policy "anonymous".api[0].windowMs must be whole seconds (got 1500)'],
    ['5 windows', { anonymous: { api: windows(5) } }, 'Policy "anonymous".api must be a list of 1 to 4 windows'],
    ['a bad surface name', { anonymous: { 'Sign In': windows(1) } }, /^Policy "anonymous": surface name must be 1-32 characters/],
    ['no surfaces', { anonymous: {} }, 'Policy "anonymous" must name at least one surface with its windows'],
    ['a bad policy name', { 'sign in': { api: windows(1) } }, 'policy name "sign in" must be 1-64 of A-Z a-z 0-9 _ . -'],
    ['an empty table', {}, 'The policy table must name at least one policy'],
  ])('%s is refused', (_, policies, message) => {
    expect(() => validatePolicies(policies)).toThrowError(message);
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: recording(undefined).client, policies: policies as never })).toThrowError(message);
  });

  it('no policies is an empty table', () => {
    expect(validatePolicies(undefined)).toEqual({});
  });
});

describe("the example service's plans", () => {
  const fixedMinute = (limit: number) => [{ limit, windowMs: 60_000 }];
  const seed = {
    free: {
      limits: { api: fixedMinute(30), web: fixedMinute(30) },
      credits: { allowance: 30, cycle: { days: 30 } },
      holds: { cap: 1, maxItems: 5000, surfaces: ['web'] },
    },
    starter: {
      limits: { api: fixedMinute(100), web: fixedMinute(100) },
      credits: { allowance: 1000, cycle: { months: 1 } },
      holds: { cap: 2, maxItems: 5000, surfaces: ['api', 'web'] },
    },
    pro: {
      limits: { api: fixedMinute(300), web: fixedMinute(300) },
      credits: { allowance: 5000, cycle: { months: 1 } },
      holds: { cap: 5, maxItems: 5000, surfaces: ['api', 'web'] },
    },
    business: {
      limits: { api: fixedMinute(1000), web: fixedMinute(1000) },
      credits: { allowance: 20000, cycle: { months: 1 } },
      holds: { cap: 10, maxItems: 5000, surfaces: ['api', 'web'] },
    },
  };

  it('is the seed table: requests/min on api and web, credits per cycle, free holds only on web, caps and max items', () => {
    expect(EXAMPLE_PLANS).toEqual(seed);
  });

  it("pass createTollgate's validation as fixed windows", () => {
    const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: recording(undefined).client });
    expect(Object.keys(tg.plans)).toEqual(['free', 'starter', 'pro', 'business']);
    for (const [name, plan] of Object.entries(seed)) {
      expect(tg.plans[name]!.limits).toEqual(
        Object.fromEntries(Object.entries(plan.limits).map(([s, ws]) => [s, ws.map((w) => ({ ...w, algorithm: 'fixed' }))])),
      );
      expect(tg.plans[name]!.credits).toEqual(plan.credits);
      expect(tg.plans[name]!.holds).toEqual(plan.holds);
    }
  });
});

describe('createTollgate options are checked before anything is sent', () => {
  it.each<[string, Record<string, unknown>, string | RegExp]>([
    ['a bad prefix', { prefix: 'a{b}' }, 'prefix must be 1-64 of A-Z a-z 0-9 _ . : -'],
    ['a bad key prefix', { keys: { prefix: 'tg_k' } }, 'keys.prefix must be 1-16 of A-Z a-z 0-9'],
    ['maxKeys 0', { keys: { maxKeys: 0 } }, /^keys\.maxKeys must be a whole number 1\.\.49/],
    [
      'more than 50 keys in all (they live in the account hash)',
      { keys: { maxKeys: 30, maxExpiringKeys: 21 } },
      /^keys\.maxExpiringKeys must be a whole number 1\.\.20/,
    ],
    ['maxExpiringKeys 1.5', { keys: { maxExpiringKeys: 1.5 } }, /^keys\.maxExpiringKeys must be a whole number/],
    ['a deny cache of 0 entries', { denyCache: { maxEntries: 0 } }, /^denyCache\.maxEntries must be a whole number >= 1/],
    ['timeoutMs 0', { timeoutMs: 0 }, /^timeoutMs must be a whole number >= 1/],
    ['leaseMs 0', { leaseMs: 0 }, /^leaseMs must be a whole number 1\.\.5356800000/],
    ['a lease longer than 62 days', { leaseMs: 62 * 86_400_000 + 1 }, /^leaseMs must be a whole number 1\.\.5356800000/],
  ])('%s', (_, options, message) => {
    const recorder = recording(undefined);
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: recorder.client, ...options })).toThrowError(message);
    expect(recorder.sent).toEqual([]);
  });

  it('plans are required: createTollgate without a plan table is refused before anything is sent', () => {
    const recorder = recording(undefined);
    expect(() => createTollgate({ redis: recorder.client } as never)).toThrowError(new InvalidInputError('The plan table must name at least one plan'));
    expect(() => createTollgate({ memory: true } as never)).toThrowError(InvalidInputError);
    expect(recorder.sent).toEqual([]);
  });

  it('a raw client passed without its adapter is named in the error', () => {
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: { evalSha: () => undefined } as never })).toThrowError(
      /a raw node-redis client: wrap it with fromNodeRedis/,
    );
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: { evalsha: () => undefined } as never })).toThrowError(
      /a raw ioredis client: wrap it with fromIoredis/,
    );
  });
});

/** The tables of the bad-input checks: a plan with an extra surface, and a policy. */
const TABLES = {
  plans: { ...EXAMPLE_PLANS, extra: { ...EXAMPLE_PLANS.free, limits: { ...EXAMPLE_PLANS.free.limits, mcp: [{ limit: 5, windowMs: 60_000 }] } } },
  policies: { anonymous: { api: [{ limit: 3, windowMs: 60_000 }] } },
};

// A key of the right form: it would reach Redis if the options were right.
const key = `tgk_acct_0123456789_${'a'.repeat(32)}`;
const cases: Array<[string, (tg: Tollgate) => Promise<unknown>]> = [
  // Subjects (docs/concepts.md#vocabulary).
  ['an empty subject', (tg) => tg.limits.admit('')],
  ['a subject with a brace (breaks the cluster hash tag)', (tg) => tg.limits.admit('a{b}')],
  ['a subject with a space', (tg) => tg.usage('a b')],
  ['a subject of 129 chars', (tg) => tg.limits.peek('a'.repeat(129))],
  ['a subject that is not a string', (tg) => tg.limits.admit(42 as unknown as string)],
  // Cost and the pre-check.
  ['cost 0', (tg) => tg.limits.admit('a', { cost: 0 })],
  ['a negative cost', (tg) => tg.limits.admit('a', { cost: -1 })],
  ['a fractional cost', (tg) => tg.limits.admit('a', { cost: 1.5 })],
  ['a NaN cost', (tg) => tg.limits.admit('a', { cost: Number.NaN })],
  ['an infinite cost', (tg) => tg.limits.admit('a', { cost: Infinity })],
  ['a cost given as a string', (tg) => tg.limits.admit('a', { cost: '2' as unknown as number })],
  ['a negative pre-check', (tg) => tg.limits.admit('a', { credits: -2 })],
  ['a fractional pre-check', (tg) => tg.limits.admit('a', { credits: 0.5 })],
  // Surfaces.
  ['a surface name in upper case', (tg) => tg.limits.admit('a', { surface: 'API' })],
  ['an empty surface name', (tg) => tg.limits.admit('a', { surface: '' })],
  ['a surface name of 33 chars', (tg) => tg.limits.peek('a', { surface: 'a'.repeat(33) })],
  ['a surface that is not a string', (tg) => tg.limits.reset('a', { surface: 7 as unknown as string })],
  ['a surface no plan has (admit)', (tg) => tg.limits.admit('a', { surface: 'ftp' })],
  ['a surface no plan has (peek)', (tg) => tg.limits.peek('a', { surface: 'ftp' })],
  ['a surface no plan has (reset)', (tg) => tg.limits.reset('a', { surface: 'ftp' })],
  ['a surface no plan has (usage)', (tg) => tg.usage('a', { surface: 'ftp' })],
  ['a surface no plan has (verify)', (tg) => tg.keys.verify(key, { surface: 'ftp' })],
  // Policies.
  ['an unknown policy', (tg) => tg.limits.admit('ip:1.2.3.4', { policy: 'signin' })],
  ['a policy name that is an Object.prototype member', (tg) => tg.limits.admit('ip:1.2.3.4', { policy: 'constructor' })],
  ['a surface the policy does not have', (tg) => tg.limits.admit('ip:1.2.3.4', { policy: 'anonymous', surface: 'web' })],
  ['a credit pre-check with a policy', (tg) => tg.limits.admit('ip:1.2.3.4', { policy: 'anonymous', credits: 1 })],
  ['peek with an unknown policy', (tg) => tg.limits.peek('ip:1.2.3.4', { policy: 'signin' })],
  ['reset with an unknown policy', (tg) => tg.limits.reset('ip:1.2.3.4', { policy: 'signin' })],
  // Keys.
  ['a key name of 65 chars', (tg) => tg.keys.issue('a', { name: 'n'.repeat(65) })],
  ['a key name with a newline', (tg) => tg.keys.issue('a', { name: 'a\nb' })],
  ['a key ttl of 0', (tg) => tg.keys.issue('a', { ttlMs: 0 })],
  ['a fractional key ttl', (tg) => tg.keys.issue('a', { ttlMs: 1.5 })],
  ['no key surfaces', (tg) => tg.keys.issue('a', { surfaces: [] })],
  ['a bad key surface', (tg) => tg.keys.issue('a', { surfaces: ['Web'] })],
  ['key surfaces as a string', (tg) => tg.keys.issue('a', { surfaces: 'web' as unknown as string[] })],
  ['a key id of 9 hex digits', (tg) => tg.keys.revoke('a', '012345678')],
  ['a key issued for a bad subject', (tg) => tg.keys.issue('a b')],
  ['verify with cost 0', (tg) => tg.keys.verify(key, { cost: 0 })],
  ['verify with a negative pre-check', (tg) => tg.keys.verify(key, { credits: -1 })],
  ['verify on a bad surface name', (tg) => tg.keys.verify(key, { surface: 'API' })],
  // Credits, holds, Idempotency-Keys and accounts.
  ['a negative charge', (tg) => tg.credits.charge('a', { required: -1 })],
  ['a fractional charge', (tg) => tg.credits.charge('a', { required: 1.5 })],
  ['a NaN charge', (tg) => tg.credits.charge('a', { required: Number.NaN })],
  ['an infinite optional charge', (tg) => tg.credits.charge('a', { required: 1, optional: Infinity })],
  ['a zero charge', (tg) => tg.credits.charge('a', { required: 0, optional: 0 })],
  ['an operation id over 255 chars', (tg) => tg.credits.charge('a', { required: 1, operationId: 'x'.repeat(256) })],
  ['an operation id with a control char', (tg) => tg.credits.charge('a', { required: 1, operationId: 'a\nb' })],
  ['a hold of 0 items', (tg) => tg.holds.open('a', { items: 0, perItem: { required: 1 } })],
  ['a hold of fractional items', (tg) => tg.holds.open('a', { items: 2.5, perItem: { required: 1 } })],
  ['a hold of 0 credits per item', (tg) => tg.holds.open('a', { items: 2, perItem: { required: 0 } })],
  ['a hold on a bad surface name', (tg) => tg.holds.open('a', { items: 2, perItem: { required: 1 }, surface: 'API' })],
  ['a budget of 0', (tg) => tg.holds.openBudget('a', { amount: 0 })],
  ['a bad hold id', (tg) => tg.holds.cancel('a', '../x')],
  ['a bad failure label', (tg) => tg.holds.settle('a', 'hold_1', { itemId: 'v1', failed: 'Not Found' })],
  ['an empty Idempotency-Key', (tg) => tg.holds.open('a', { items: 1, perItem: { required: 1 }, idempotency: { key: '', body: {} } })],
  ['an Idempotency-Key over 255 chars', (tg) => tg.idempotency.begin('a', 'k'.repeat(256), {})],
  ['a cycle in weeks', (tg) => tg.accounts.startCycle('a', { every: { weeks: 2 } as unknown as { days: number } })],
  ['a negative signup instant', (tg) => tg.accounts.create('a', { plan: 'free', signupAt: -5 })],
];

describe.each(CLIENT_KINDS)('bad input is refused before Redis is touched, through a recording %s client', (kind) => {
  let client: TestClient;
  let recorder: Recorder;
  let tg: Tollgate;
  beforeAll(async () => {
    client = await connectTestClient(kind);
    recorder = recording(client.adapter);
    tg = createTollgate({ redis: recorder.client, ...TABLES });
  });
  afterAll(() => client.close());

  it.each(cases)('%s -> InvalidInputError, nothing sent', async (_, call) => {
    recorder.clear();
    await expect(call(tg)).rejects.toBeInstanceOf(InvalidInputError);
    expect(recorder.sent).toEqual([]);
  });

  it('an unknown plan -> UnknownPlanError naming the known plans, nothing sent', async () => {
    recorder.clear();
    await expect(tg.accounts.create('a', { plan: 'gold' })).rejects.toThrowError(new UnknownPlanError('gold', ['free', 'starter', 'pro', 'business', 'extra']));
    await expect(tg.accounts.changePlan('a', 'gold')).rejects.toBeInstanceOf(UnknownPlanError);
    expect(recorder.sent).toEqual([]);
  });

  it('messages name the bad value', async () => {
    await expect(tg.credits.charge('a', { required: -1 })).rejects.toThrowError('required must be a whole number >= 0 (got -1)');
    await expect(tg.limits.admit('a{b}')).rejects.toThrowError('Subject id must be 1-128 characters of A-Z a-z 0-9 _ . : - (got "a{b}")');
    await expect(tg.limits.admit('a', { cost: 0 })).rejects.toThrowError('cost must be a whole number >= 1 (got 0)');
    await expect(tg.limits.admit('a', { surface: 'ftp' })).rejects.toThrowError('Surface "ftp" is not a surface of any plan (api, web, mcp)');
  });

  it("a surface some plan has reaches Redis (the account's own plan decides there)", async () => {
    recorder.clear();
    // No such account: the script answers, so the call was sent.
    await expect(tg.limits.admit('nobody', { surface: 'mcp' })).rejects.toThrowError(/No account "nobody"/);
    expect(recorder.sent.length).toBeGreaterThan(0);
  });
});

describe('bad input is refused in memory as on Redis, before anything changes', () => {
  // On a client that must never be used: every case fails before a command would be sent.
  const onRedis = createTollgate({ redis: recording(undefined).client, ...TABLES });
  const clock = () => Date.UTC(2026, 0, 15, 12);
  const inMemory = createTollgate({ memory: true, clock, ...TABLES });
  beforeAll(async () => {
    await inMemory.accounts.create('a', { plan: 'extra' });
    await inMemory.keys.issue('a');
  });

  it.each(cases)('%s -> the InvalidInputError Redis gives, nothing changed', async (_, call) => {
    const before = [await inMemory.accounts.inspect('a'), await inMemory.keys.list('a'), await inMemory.limits.peek('ip:1.2.3.4', { policy: 'anonymous' })];
    const want = await call(onRedis).then(
      () => undefined,
      (error: unknown) => error,
    );
    const got = await call(inMemory).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(want).toBeInstanceOf(InvalidInputError);
    expect(got).toBeInstanceOf(InvalidInputError);
    expect((got as Error).message).toBe((want as Error).message);
    expect([await inMemory.accounts.inspect('a'), await inMemory.keys.list('a'), await inMemory.limits.peek('ip:1.2.3.4', { policy: 'anonymous' })]).toEqual(
      before,
    );
  });

  it('an unknown plan -> the same UnknownPlanError', async () => {
    await expect(inMemory.accounts.create('b', { plan: 'gold' })).rejects.toThrowError(
      new UnknownPlanError('gold', ['free', 'starter', 'pro', 'business', 'extra']),
    );
    await expect(inMemory.accounts.changePlan('a', 'gold')).rejects.toBeInstanceOf(UnknownPlanError);
    expect((await inMemory.usage('a')).plan).toBe('extra');
  });
});

describe('typed errors', () => {
  it('carry a stable name and code', () => {
    const e = new InvalidInputError('x');
    expect([e.name, e.code]).toEqual(['InvalidInputError', 'invalid_input']);
    expect(e).toBeInstanceOf(TollgateError);
    expect(new StoreUnavailableError('down')).toMatchObject({ name: 'StoreUnavailableError', code: 'unavailable' });
    expect(new UnknownPlanError('gold', ['free'])).toMatchObject({ name: 'UnknownPlanError', code: 'unknown_plan', plan: 'gold' });
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
