/** GET /api/v1/usage (SPEC §4, §9): the account's quota state; free and not counted. */
import type { Tollgate } from '../../../src/index.ts';
import { usageBody } from '../bodies.ts';
import type { AuthedHandler } from '../guard.ts';
import { json } from '../http.ts';

export function getUsage(tollgate: Tollgate): AuthedHandler {
  return async (_request, call) => json(200, usageBody(await tollgate.usage(call.caller.accountId, call.caller.surface)));
}
