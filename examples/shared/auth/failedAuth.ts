/**
 * Failed key checks per client IP (a tollgate policy; docs/concepts.md#vocabulary), so that keys, session cookies,
 * OAuth tokens and the admin token cannot be guessed by brute force. Every 401 that answers a
 * credential that was presented and did not check out counts one attempt for the request's IP
 * (tollgate's ipSubject: an IPv4-mapped address as its IPv4 address, IPv6 by its /56, a
 * subject without an account); past `perMinute` attempts in the minute the
 * IP gets 429 rate_limited with Retry-After until the window resets, whatever it presents.
 * Successful requests and sign-ins never count, nor does a request that presents nothing.
 *
 * Cost: nothing on a request that passes. A blocked IP is refused from this process's memory
 * before its key is verified (tollgate's deny cache, limits.denied: no Redis call); another
 * process learns of the block at that IP's next failed check there.
 */
import { isTollgateError, type PolicyTable, type Tollgate } from 'tollgate';
import { ipSubject, rateLimitedReply } from 'tollgate/http';
import type { ApiRequest, HttpReply } from '../http/handler.ts';

export const FAILED_AUTH = { policy: 'failed_auth', surface: 'attempts' } as const;

/** Default attempts per minute and IP (FAILED_AUTH_PER_MINUTE). */
export const FAILED_AUTH_PER_MINUTE = 10;

export function failedAuthPolicy(perMinute: number): PolicyTable {
  return { [FAILED_AUTH.policy]: { [FAILED_AUTH.surface]: [{ limit: perMinute, windowMs: 60_000 }] } };
}

export class FailedAuth {
  constructor(
    private readonly tollgate: Tollgate,
    private readonly ietfHeaders: boolean,
  ) {}

  /** The 429 for an IP this process knows is over its attempts, read from memory; else undefined. */
  blocked(request: ApiRequest): HttpReply | undefined {
    const denial = this.tollgate.limits.denied(ipSubject(request.ip), FAILED_AUTH);
    return denial && this.tooMany(request, denial);
  }

  /**
   * Counts one failed check of the request's IP: the 401 to send, or 429 when this attempt is
   * one too many. If the count cannot be made (the quota store is down) the check's own answer,
   * the 401, still stands.
   */
  async refuse(request: ApiRequest, unauthorized: HttpReply): Promise<HttpReply> {
    try {
      const admission = await this.tollgate.limits.admit(ipSubject(request.ip), FAILED_AUTH);
      return admission.ok ? unauthorized : this.tooMany(request, admission);
    } catch (error) {
      if (isTollgateError(error, 'unavailable')) return unauthorized;
      throw error;
    }
  }

  private tooMany(request: ApiRequest, denial: Parameters<typeof rateLimitedReply>[0]): HttpReply {
    return rateLimitedReply(denial, request.requestId, { ietf: this.ietfHeaders, policy: FAILED_AUTH.policy });
  }
}
