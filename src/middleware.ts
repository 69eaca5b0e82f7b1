/**
 * What tollgate/express, tollgate/koa, tollgate/fastify and tollgate/hono share, and what a
 * host on any other framework calls itself (checkRequest): one request checked with the
 * framework left out; the example servers' guard takes its decision from here too. A key is
 * verified together with the admit (keys.verify: one round trip); a subject the host already
 * knows is admitted with limits.admit. The answer is either the rate-limit headers to send
 * with the endpoint's response, or the error reply to send instead: 401 (no rate-limit
 * headers), 429, 402 or 503 (the quota store unreachable; `onStoreError` may decide otherwise,
 * see src/storeError.ts). A surface or policy no table has is refused when the options are
 * checked, at start-up; one worked out per request is refused then, as the host's mistake.
 */
import { InvalidInputError, isTollgateError } from './errors.ts';
import { errorReply, insufficientReply, newRequestId, rateLimitedReply, rateLimitHeaders } from './replies.ts';
import { refused, type PerRequest, type RateLimitDecision, type RateLimitOptions } from './rateLimitOptions.ts';
import type { Admission } from './rules/limits.ts';
import type { Tollgate } from './tollgate.ts';
import { rememberWindows, storeErrorMode, whenStoreFails } from './storeError.ts';

export type { PerRequest, RateLimitDecision, RateLimitOptions, RateLimitPass, RateLimitRefusal, RefusalType, StoreErrorMode } from './rateLimitOptions.ts';

const UNAUTHORIZED = 'A valid API key is required';

/** Checks the options once, when the middleware is made: a mistake shows at start-up. */
export function checkRateLimitOptions<Req>(options: RateLimitOptions<Req>): void {
  if (!options || typeof options.tollgate?.limits?.admit !== 'function')
    throw new TypeError('rateLimit needs { tollgate }: the object createTollgate returned');
  if ((options.key === undefined) === (options.subject === undefined))
    throw new TypeError('rateLimit needs exactly one of key (an API key to verify) or subject (a subject to admit)');
  if (options.key !== undefined && typeof options.key !== 'function') throw new TypeError('rateLimit: key must be a function (req) => string | null');
  if (options.subject !== undefined && typeof options.subject !== 'function')
    throw new TypeError('rateLimit: subject must be a function (req) => string | null');
  if (options.policy !== undefined && options.key !== undefined)
    throw new TypeError('rateLimit: policy counts subjects without an account; use it with subject, not key');
  const { plans, policies } = options.tollgate;
  const surface = typeof options.surface === 'function' ? undefined : (options.surface ?? 'api');
  if (options.policy !== undefined) {
    if (!Object.hasOwn(policies, options.policy))
      throw new InvalidInputError(
        `rateLimit: policy ${JSON.stringify(options.policy)} is not one of createTollgate's policies (${Object.keys(policies).join(', ') || 'none'})`,
      );
    const has = Object.keys(policies[options.policy]!);
    if (surface !== undefined && !has.includes(surface))
      throw new InvalidInputError(`rateLimit: surface ${JSON.stringify(surface)} is not a surface of policy "${options.policy}" (${has.join(', ')})`);
  } else if (surface !== undefined) {
    const has = new Set(Object.values(plans).flatMap((plan) => Object.keys(plan.limits)));
    if (!has.has(surface)) throw new InvalidInputError(`rateLimit: surface ${JSON.stringify(surface)} is not a surface of any plan (${[...has].join(', ')})`);
  }
  storeErrorMode(options);
}

function value<Req, T>(option: PerRequest<Req, T> | undefined, req: Req, fallback: T): T {
  if (option === undefined) return fallback;
  return typeof option === 'function' ? (option as (req: Req) => T)(req) : option;
}

/**
 * Checks and counts one request, as the `rateLimit` middlewares do, for any framework: the
 * key verified with the admit (or the subject admitted), in one Redis round trip. Answers the
 * headers to send with the response, or the refusal to send instead; never throws for a
 * refusal, only for setup mistakes. Check the options once with checkRateLimitOptions.
 *
 * @example
 * ```ts
 * const options = { tollgate, key: (req: IncomingMessage) => String(req.headers["x-api-key"] ?? "") || null, credits: 1 };
 * checkRateLimitOptions(options);
 * const decision = await checkRequest(options, req);
 * if (!decision.ok) return send(decision.refusal.reply); // 401, 429, 402 or 503
 * for (const [name, value] of Object.entries(decision.pass.headers)) res.setHeader(name, value);
 * ```
 */
export async function checkRequest<Req>(options: RateLimitOptions<Req>, req: Req): Promise<RateLimitDecision> {
  const requestId = () => (options.requestId ? options.requestId(req) : newRequestId());
  const surface = value(options.surface, req, 'api');
  const cost = value(options.cost, req, 1);
  const credits = value(options.credits, req, 0);
  const unauthorized = (): RateLimitDecision => refused('unauthorized', errorReply('unauthorized', UNAUTHORIZED, { requestId: requestId() }));

  let subject: string;
  let keyId: string | undefined;
  let admission: Admission;
  let given: string | null | undefined;
  try {
    if (options.key) {
      given = options.key(req);
      if (typeof given !== 'string' || given === '') return unauthorized();
      const verification = await options.tollgate.keys.verify(given, { surface, cost, credits });
      if (!verification.ok) return unauthorized();
      ({ subject, keyId, admission } = verification);
    } else {
      given = options.subject!(req);
      if (typeof given !== 'string' || given === '') return unauthorized();
      subject = given;
      admission = await options.tollgate.limits.admit(subject, { surface, cost, credits, ...(options.policy === undefined ? {} : { policy: options.policy }) });
    }
  } catch (error) {
    if (isTollgateError(error, 'unavailable')) return whenStoreFails(options, { given: given!, surface, cost, credits, requestId }, error);
    // A subject the host named that has no account proves nothing, like an unknown key.
    if (isTollgateError(error, 'account_not_found')) return unauthorized();
    throw error;
  }

  if (options.onStoreError === 'local') rememberWindows(options, subject, surface, admission.windows);
  const headerOptions = { ietf: options.ietfHeaders === true, policy: options.policy ?? surface };
  if (!admission.ok) return refused('rate_limited', rateLimitedReply(admission, requestId(), headerOptions), { subject, admission });
  const headers = rateLimitHeaders(admission, headerOptions);
  const release = admission.lease === undefined ? undefined : releaser(options.tollgate, subject, admission.lease);
  if (admission.credits && !admission.credits.sufficient) {
    // Refused: the place it took is not needed.
    await release?.();
    const reply = insufficientReply(admission.credits.balance, admission.credits.needed, requestId(), headers);
    return refused('insufficient_quota', reply, { subject, admission });
  }
  return { ok: true, pass: { subject, ...(keyId === undefined ? {} : { keyId }), surface, admission, headers, ...(release === undefined ? {} : { release }) } };
}

/** pass.release: frees the lease once, however often it is called; a store error is swallowed. */
function releaser(tollgate: Pick<Tollgate, 'limits'>, subject: string, lease: string): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () =>
    (done ??= tollgate.limits.release(subject, lease).then(
      () => undefined,
      () => undefined,
    ));
}
