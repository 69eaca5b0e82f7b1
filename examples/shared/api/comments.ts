/**
 * GET /api/v1/comments/:videoId?sort=top|newest&page_token=&reply_to= (docs/example-service.md#transcripts-and-comments): the balance
 * must hold the price before fetching (checked by the guard in the admission round trip); a
 * nonempty page is charged the price (Top, Newest, continuation or reply thread alike); errors
 * and empty pages cost nothing.
 */
import type { Tollgate } from 'tollgate';
import { insufficientReply } from 'tollgate/http';
import { chargeAfterWork } from './charge.ts';
import type { AuthedHandler } from '../auth/guard.ts';
import { json } from '../http/handler.ts';
import { assertVideoId, parseCommentSort, type VideoPlatform } from '../platform/index.ts';

export function getComments(deps: { tollgate: Tollgate; platform: VideoPlatform }): AuthedHandler {
  return async (request, call) => {
    const videoId = assertVideoId(request.params.videoId);
    const sort = parseCommentSort(request.query.sort ?? 'top');
    const pre = call.credits!;
    if (!pre.sufficient) return insufficientReply(pre.available, pre.needed, request.requestId);

    const page = await deps.platform.getComments(videoId, {
      sort,
      pageToken: request.query.page_token,
      replyTo: request.query.reply_to,
    });
    let charged = 0;
    if (page.comments.length > 0) {
      const charge = await chargeAfterWork(deps.tollgate, call.caller.accountId, { required: call.price.credits, operationId: request.requestId });
      if (!charge.ok) return insufficientReply(charge.available, charge.needed, request.requestId);
      charged = charge.charged;
    }
    return json(200, page, { 'X-Credits-Charged': String(charged), 'X-Request-Id': request.requestId });
  };
}
