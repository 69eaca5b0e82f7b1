/**
 * Request bodies, read the same way by both servers (SPEC §8): one reader on Node's request
 * stream instead of each framework's body parser, so that content types, charsets, sizes and
 * nesting get the same answer from Express and Koa.
 *
 * - A body is JSON: `Content-Type: application/json` (or `application/<something>+json`) in
 *   UTF-8. Any other type, or none, is 415 unsupported_media_type; so is a charset other than
 *   utf-8 (RFC 8259 §8.1: JSON exchanged between systems is UTF-8). A cross-site form or a
 *   no-cors fetch cannot send application/json, so a cookie alone never carries a JSON body
 *   from another site.
 * - Larger than MAX_BODY_BYTES: 413 payload_too_large. The rest of the body is still read and
 *   thrown away, so the client, still sending, gets the 413 rather than a broken pipe; past
 *   DRAIN_BYTES the connection is closed after the reply instead.
 * - Not UTF-8, not JSON, or nested deeper than MAX_BODY_DEPTH: 400 invalid_request.
 * The problem is only noted here (bodyError): the route answers it in its own order, after
 * authentication and the rate limit (SPEC §6), and routes that take no body never look.
 */
import type { IncomingMessage } from 'node:http';
import { MESSAGES } from './messages.ts';

export const MAX_BODY_BYTES = 1024 * 1024;
/** A body up to this size is read to its end even when it is refused. */
export const DRAIN_BYTES = 16 * 1024 * 1024;
/** Far deeper than any body the service takes (an MCP call is 4 levels), far below the stack's limit. */
export const MAX_BODY_DEPTH = 32;

export interface BodyError {
  type: 'invalid_request' | 'payload_too_large' | 'unsupported_media_type';
  message: string;
}

export interface ReadBody {
  /** The parsed JSON; undefined when the request had no body or it was refused. */
  body?: unknown;
  bodyError?: BodyError;
  /** False when the body was not read to its end (past DRAIN_BYTES): close the connection after the reply. */
  drained: boolean;
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;

/** Reads and checks the body of any request; never rejects. */
export async function readBody(req: IncomingMessage): Promise<ReadBody> {
  if (!hasBody(req)) return { drained: true };
  const type = mediaType(req.headers['content-type']);
  const refusal = typeRefusal(type);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > DRAIN_BYTES) {
    return { bodyError: refusal ?? tooLarge(), drained: false };
  }
  const read = await collect(req, refusal === undefined ? MAX_BODY_BYTES : 0);
  if (read.error) return { bodyError: { type: 'invalid_request', message: MESSAGES.bodyUnreadable }, drained: read.drained };
  if (refusal) return { bodyError: refusal, drained: read.drained };
  if (read.bytes === null) return { bodyError: tooLarge(), drained: read.drained };
  if (read.bytes.length === 0) return { drained: true };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(read.bytes);
  } catch {
    return { bodyError: { type: 'invalid_request', message: MESSAGES.bodyNotUtf8 }, drained: true };
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { bodyError: { type: 'invalid_request', message: MESSAGES.bodyNotJson }, drained: true };
  }
  if (depthOf(body, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
    return { bodyError: { type: 'invalid_request', message: MESSAGES.bodyTooDeep(MAX_BODY_DEPTH) }, drained: true };
  }
  return { body, drained: true };
}

/** RFC 9112 §6.3: a request has a body when it says how long it is (and that is not 0) or is chunked. */
function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

interface MediaType {
  essence: string;
  charset: string | undefined;
}

function mediaType(header: string | undefined): MediaType | undefined {
  if (header === undefined) return undefined;
  const [essence = '', ...params] = header.split(';');
  let charset: string | undefined;
  for (const param of params) {
    const at = param.indexOf('=');
    if (at < 0) continue;
    if (param.slice(0, at).trim().toLowerCase() === 'charset') charset = param.slice(at + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase();
  }
  return { essence: essence.trim().toLowerCase(), charset };
}

function typeRefusal(type: MediaType | undefined): BodyError | undefined {
  if (type === undefined || !JSON_TYPE.test(type.essence)) {
    return { type: 'unsupported_media_type', message: MESSAGES.bodyMediaType(type?.essence) };
  }
  if (type.charset !== undefined && type.charset !== 'utf-8' && type.charset !== 'utf8') {
    return { type: 'unsupported_media_type', message: MESSAGES.bodyCharset(type.charset) };
  }
  return undefined;
}

function tooLarge(): BodyError {
  return { type: 'payload_too_large', message: MESSAGES.bodyTooLarge(MAX_BODY_BYTES) };
}

/**
 * The body's bytes while they fit in `keep` (null once they do not), read to the end or to
 * DRAIN_BYTES, whichever comes first.
 */
function collect(req: IncomingMessage, keep: number): Promise<{ bytes: Buffer | null; drained: boolean; error?: true }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let kept = true;
    const finish = (result: { bytes: Buffer | null; drained: boolean; error?: true }) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onError);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (kept && size <= keep) chunks.push(chunk);
      else if (kept) {
        kept = false;
        chunks.length = 0;
      }
      if (size > DRAIN_BYTES) {
        req.pause();
        finish({ bytes: null, drained: false });
      }
    };
    const onEnd = () => finish({ bytes: kept ? Buffer.concat(chunks, size) : null, drained: true });
    const onError = () => finish({ bytes: null, drained: false, error: true });
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    // Closed before its end: the client went away mid-body.
    req.once('close', onError);
  });
}

/** How deeply arrays and objects nest in a parsed value, counted without recursion and only up to `limit` + 1. */
export function depthOf(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return deepest;
}
