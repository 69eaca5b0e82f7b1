/** GET /api/v1/usage (docs/example-service.md): the account's quota state, read with the credential in one round trip; free and not counted. */
import { usageBody } from './bodies.ts';
import type { AuthedHandler } from '../auth/guard.ts';
import { json } from '../http/handler.ts';

export const getUsage: AuthedHandler = async (_request, call) => {
  if (!call.usage) throw new Error('GET /api/v1/usage must be priced as a read that counts no request (routes.ts)');
  return json(200, usageBody(call.usage));
};
