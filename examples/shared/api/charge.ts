/**
 * Charging after the work is done (docs/example-service.md#transcripts-and-comments). The charge carries the request id as its operation
 * id, so one retry after a store timeout cannot charge twice; if the store still fails the
 * caller fails closed (503) and sends nothing unpaid.
 */
import { isTollgateError, type ChargeOutcome, type ChargeRequest, type Tollgate } from 'tollgate';

export async function chargeAfterWork(tollgate: Tollgate, accountId: string, request: ChargeRequest): Promise<ChargeOutcome> {
  try {
    return await tollgate.credits.charge(accountId, request);
  } catch (error) {
    if (!isTollgateError(error, 'unavailable') || request.operationId === undefined) throw error;
    return tollgate.credits.charge(accountId, request);
  }
}
