/**
 * Request bodies, read the same way by both servers (docs/example-service.md#errors): one reader on Node's request
 * stream instead of each framework's body parsers, so that media types, charsets, sizes and
 * nesting get the same answer from Express and Koa.
 *
 * - JSON (`application/json`, or `application/<something>+json`) is parsed, up to
 *   MAX_BODY_BYTES; the website's forms (`application/x-www-form-urlencoded`) up to
 *   MAX_FORM_BYTES, a field sent more than once becoming a list (which no form reads). Both in
 *   UTF-8 only: another charset is 415 unsupported_media_type (RFC 8259 §8.1: JSON exchanged
 *   between systems is UTF-8; our pages send their forms in UTF-8). Any other media type, or
 *   none, is not parsed: the route then answers 415 unless it reads that type (service.ts
 *   checks the route's `bodies`). A cross-site form or a no-cors fetch cannot send
 *   application/json, so a cookie alone never carries a JSON body from another site.
 * - Larger than the limit: 413 payload_too_large. The rest of the body is still read and
 *   thrown away, so the client, still sending, gets the 413 rather than a broken pipe; past
 *   DRAIN_BYTES the connection is closed after the reply instead.
 * - Not UTF-8, not JSON, or nested deeper than MAX_BODY_DEPTH: 400 invalid_request.
 * - Content-Encoding: `identity` (or none) is read as it is; `gzip` (`x-gzip`) and `deflate`
 *   are decoded as they arrive, and the size limits count the decoded bytes, so a small body
 *   that inflates past its limit (a zip bomb) is 413 and is never held in memory whole. Any
 *   other coding is 415 unsupported_media_type with `Accept-Encoding: gzip, deflate`
 *   (RFC 9110 §12.5.3); a body that does not decode as the coding it names is 400.
 * The problem is only noted here (bodyError): the route answers it in its own order, after
 * authentication and the rate limit (docs/example-service.md#bulk-jobs), and routes that take no body never look.
 */
import type { IncomingMessage } from 'node:http';
import { createGunzip, createInflate, type Gunzip, type Inflate } from 'node:zlib';
import { MESSAGES } from './messages.ts';

export const MAX_BODY_BYTES = 1024 * 1024;
export const MAX_FORM_BYTES = 64 * 1024;
/** A body up to this size is read to its end even when it is refused. */
export const DRAIN_BYTES = 16 * 1024 * 1024;
/** Far deeper than any body the service takes (an MCP call is 4 levels), far below the stack's limit. */
export const MAX_BODY_DEPTH = 32;

export type BodyKind = 'json' | 'form';

export interface BodyError {
  type: 'invalid_request' | 'payload_too_large' | 'unsupported_media_type';
  message: string;
  /** Headers the refusal carries (Accept-Encoding on a coding the reader does not decode). */
  headers?: Record<string, string>;
}

export interface ReadBody {
  /** The parsed JSON or form; undefined when the request had no body, or it was not read. */
  body?: unknown;
  /** The media type as sent ('' without Content-Type); undefined when there was no body. */
  bodyType?: string;
  bodyError?: BodyError;
  /** False when the body was not read to its end (past DRAIN_BYTES): close the connection after the reply. */
  drained: boolean;
}

/** The content codings the reader decodes, as a 415 names them in Accept-Encoding. */
export const ACCEPTED_ENCODINGS = 'gzip, deflate';

type Coding = 'gzip' | 'deflate';
const CODINGS: Readonly<Record<string, Coding>> = { gzip: 'gzip', 'x-gzip': 'gzip', deflate: 'deflate' };

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;
const FORM_TYPE = 'application/x-www-form-urlencoded';

/** Which kind of body a media type is, if it is one the service reads at all. */
export function bodyKind(bodyType: string | undefined): BodyKind | undefined {
  if (bodyType === undefined) return undefined;
  if (JSON_TYPE.test(bodyType)) return 'json';
  return bodyType === FORM_TYPE ? 'form' : undefined;
}

/** Reads and checks the body of any request; never rejects. */
export async function readBody(req: IncomingMessage): Promise<ReadBody> {
  if (!hasBody(req)) return { drained: true };
  const { essence: bodyType, charset } = mediaType(req.headers['content-type']);
  const kind = bodyKind(bodyType);
  const encoding = contentCodings(req.headers['content-encoding']);
  let refusal: BodyError | undefined;
  if ('unsupported' in encoding) {
    refusal = { type: 'unsupported_media_type', message: MESSAGES.bodyEncoding(encoding.unsupported), headers: { 'Accept-Encoding': ACCEPTED_ENCODINGS } };
  } else if (kind !== undefined && charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    refusal = { type: 'unsupported_media_type', message: MESSAGES.bodyCharset(charset) };
  }
  const limit = kind === 'json' ? MAX_BODY_BYTES : kind === 'form' ? MAX_FORM_BYTES : 0;
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > DRAIN_BYTES) return { bodyType, bodyError: refusal ?? tooLarge(kind, limit), drained: false };
  // Bodies of a type no route reads, or refused already, are read only to be thrown away.
  const read = kind === undefined || refusal ? await collect(req, 0, []) : await collect(req, limit, 'codings' in encoding ? encoding.codings : []);
  if (read.error === 'unreadable') return { bodyType, bodyError: { type: 'invalid_request', message: MESSAGES.bodyUnreadable }, drained: read.drained };
  if (refusal || kind === undefined) return { bodyType, ...(refusal ? { bodyError: refusal } : {}), drained: read.drained };
  if (read.error === 'undecodable') {
    return {
      bodyType,
      bodyError: { type: 'invalid_request', message: MESSAGES.bodyNotDecodable(String(req.headers['content-encoding'])) },
      drained: read.drained,
    };
  }
  if (read.bytes === null) return { bodyType, bodyError: tooLarge(kind, limit), drained: read.drained };
  if (read.bytes.length === 0) return { drained: true };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(read.bytes);
  } catch {
    return { bodyType, bodyError: { type: 'invalid_request', message: MESSAGES.bodyNotUtf8 }, drained: true };
  }
  if (kind === 'form') return { bodyType, body: formBody(text), drained: true };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { bodyType, bodyError: { type: 'invalid_request', message: MESSAGES.bodyNotJson }, drained: true };
  }
  if (depthOf(body, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
    return { bodyType, bodyError: { type: 'invalid_request', message: MESSAGES.bodyTooDeep(MAX_BODY_DEPTH) }, drained: true };
  }
  return { bodyType, body, drained: true };
}

/** RFC 9112 §6.3: a request has a body when it says how long it is (and that is not 0) or is chunked. */
function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

/**
 * The codings a body was sent in, in the order they were applied (RFC 9110 §8.4); `identity`
 * adds none. The first coding the reader does not decode is `unsupported`.
 */
function contentCodings(header: string | undefined): { codings: Coding[] } | { unsupported: string } {
  const codings: Coding[] = [];
  for (const name of (header ?? '').split(',')) {
    const token = name.trim().toLowerCase();
    if (token === '' || token === 'identity') continue;
    const coding = CODINGS[token];
    if (coding === undefined) return { unsupported: token };
    codings.push(coding);
  }
  return { codings };
}

function mediaType(header: string | undefined): { essence: string; charset: string | undefined } {
  const [essence = '', ...params] = (header ?? '').split(';');
  let charset: string | undefined;
  for (const param of params) {
    const at = param.indexOf('=');
    if (at < 0) continue;
    if (param.slice(0, at).trim().toLowerCase() === 'charset')
      charset = param
        .slice(at + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1')
        .toLowerCase();
  }
  return { essence: essence.trim().toLowerCase(), charset };
}

/** A form's fields; one sent more than once is the list of its values. Own properties only (`__proto__` is a field like any). */
function formBody(text: string): Record<string, string | string[]> {
  const fields = new Map<string, string | string[]>();
  for (const [name, value] of new URLSearchParams(text)) {
    const seen = fields.get(name);
    fields.set(name, seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]);
  }
  return Object.fromEntries(fields);
}

function tooLarge(kind: BodyKind | undefined, limit: number): BodyError {
  return { type: 'payload_too_large', message: MESSAGES.bodyTooLarge(kind === undefined ? MAX_BODY_BYTES : limit) };
}

interface Collected {
  /** The (decoded) body, or null once it is larger than `keep` or could not be had. */
  bytes: Buffer | null;
  /** False when the body was not read to its end (past DRAIN_BYTES). */
  drained: boolean;
  /** unreadable: the client went away mid-body; undecodable: not the coding it names. */
  error?: 'unreadable' | 'undecodable';
}

/**
 * The body's bytes, decoded from `codings` as they arrive, while they fit in `keep` (null
 * once they do not: the decoder is dropped there, so a body that inflates without end costs
 * at most `keep` bytes); the body itself is read to its end or to DRAIN_BYTES, whichever
 * comes first.
 */
function collect(req: IncomingMessage, keep: number, codings: readonly Coding[]): Promise<Collected> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let size = 0;
    let kept = true;
    let undecodable = false;
    let ended = false;
    let done = false;
    // The decoders in the order to undo the codings: the last applied is the first undone.
    const decoders = [...codings].reverse().map(decoderFor);
    for (let at = 1; at < decoders.length; at++) decoders[at - 1]!.pipe(decoders[at]!);
    const first = decoders[0];
    const last = decoders.at(-1);
    let decoding = first !== undefined;

    const finish = (result: Collected) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onError);
      for (const decoder of decoders) decoder.destroy();
      resolve(result);
    };
    const result = (): Collected =>
      undecodable ? { bytes: null, drained: true, error: 'undecodable' } : { bytes: kept ? Buffer.concat(chunks, size) : null, drained: true };
    // No more decoding: the coded data ended, grew past `keep`, or is not what it claims. The
    // rest of the body is only counted.
    const stopDecoding = () => {
      if (!decoding) return;
      decoding = false;
      for (const decoder of decoders) decoder.destroy();
      if (req.isPaused()) req.resume();
      if (ended) finish(result());
    };
    const take = (chunk: Buffer) => {
      size += chunk.length;
      if (kept && size <= keep) chunks.push(chunk);
      else if (kept) {
        kept = false;
        chunks.length = 0;
        stopDecoding();
      }
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > DRAIN_BYTES) {
        req.pause();
        finish({ bytes: null, drained: false });
      } else if (decoding) {
        // Backpressure: the body waits while the decoder works through what it has.
        if (!first!.write(chunk)) {
          req.pause();
          first!.once('drain', () => decoding && req.resume());
        }
      } else if (first === undefined) take(chunk);
    };
    const onEnd = () => {
      ended = true;
      if (decoding) first!.end();
      else finish(result());
    };
    // A request emits 'close' after its end too: only a close before the end loses the body.
    const onError = () => ended || finish({ bytes: null, drained: false, error: 'unreadable' });
    for (const decoder of decoders) {
      decoder.on('error', () => {
        undecodable = true;
        stopDecoding();
      });
    }
    last?.on('data', take);
    // The coded data ended: whatever follows it is read to the end and ignored, as zlib
    // ignores it within one chunk.
    last?.once('end', stopDecoding);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    // Closed before its end: the client went away mid-body.
    req.once('close', onError);
  });
}

function decoderFor(coding: Coding): Gunzip | Inflate {
  return coding === 'gzip' ? createGunzip() : createInflate();
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
