/**
 * GET /transcript/:id?format=json|text|srt|vtt, in this order: admit + balance >= the
 * price (one round trip, done by the guard) -> fetch -> convert -> charge the price -> respond.
 * A failed fetch or conversion charges nothing; a charge that finds the balance gone answers
 * 402 and the transcript is not sent.
 */
import type { Tollgate } from 'tollgate';
import { insufficientReply } from 'tollgate/http';
import { chargeAfterWork } from './charge.ts';
import type { AuthedHandler } from '../auth/guard.ts';
import { json } from '../http/handler.ts';
import { assertVideoId, convertTranscript, parseTranscriptFormat, type VideoPlatform } from '../platform/index.ts';

export function getTranscript(deps: { tollgate: Tollgate; platform: VideoPlatform }): AuthedHandler {
  return async (request, call) => {
    const videoId = assertVideoId(request.params.id);
    const format = parseTranscriptFormat(request.query.format ?? 'json');
    const pre = call.credits!;
    if (!pre.sufficient) return insufficientReply(pre.available, pre.needed, request.requestId);

    const transcript = await deps.platform.getTranscript(videoId);
    const converted = convertTranscript(transcript, format);

    const charge = await chargeAfterWork(deps.tollgate, call.caller.accountId, { required: call.price.credits, operationId: request.requestId });
    if (!charge.ok) return insufficientReply(charge.available, charge.needed, request.requestId);
    const headers = { 'X-Credits-Charged': String(charge.charged), 'X-Request-Id': request.requestId };
    if (format === 'json') return json(200, transcript, headers);
    return { status: 200, headers: { ...headers, 'Content-Type': converted.contentType }, body: converted.body };
  };
}
