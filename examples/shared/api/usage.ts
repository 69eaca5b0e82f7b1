/**
 * GET /api/v1/usage (docs/example-service.md#usage): the account's quota state, read with the
 * credential in one round trip, and its sources of credits (credits.grants) in a second read;
 * free and not counted.
 */
import type { Tollgate } from 'tollgate';
import { usageBody } from './bodies.ts';
import type { AuthedHandler } from '../auth/guard.ts';
import { json } from '../http/handler.ts';

export function getUsage(deps: { tollgate: Tollgate }): AuthedHandler {
  return async (_request, call) => {
    if (!call.usage) throw new Error('GET /api/v1/usage must be priced as a read that counts no request (routes.ts)');
    const grants = await deps.tollgate.credits.grants(call.caller.accountId);
    return json(200, usageBody(call.usage, grants));
  };
}
