/**
 * Every message the service puts in an error body (docs/example-service.md#errors), in one place so that REST, MCP and
 * the website say the same thing in the same words. The types and statuses come from
 * tollgate's ERROR_STATUS; the credit and rate-limit messages are tollgate's own
 * (insufficientReply, rateLimitedReply).
 */
export const MESSAGES = {
  // credentials
  unauthorized: 'A valid API key is required (Authorization: Bearer <key> or X-API-Key)',
  mcpUnauthorized: 'MCP needs an API key or OAuth token: Authorization: Bearer <token>',
  login: 'POST /web/login takes {"api_key": "<a valid API key>"}',
  adminUnauthorized: 'Admin endpoints need Authorization: Bearer <ADMIN_TOKEN>',

  // requests no handler can read
  unreadablePath: 'The request path is not valid percent-encoding',
  unreadableRequest: 'The request could not be read',
  noRoute: (method: string, path: string) => `No route for ${method} ${path}`,
  methodNotAllowed: (method: string, allow: string) => `${method.slice(0, 16)} is not allowed here; allowed: ${allow}`,

  // request bodies (body.ts)
  bodyMediaType: (accepted: ReadonlyArray<'json' | 'form'>, type: string) =>
    `The request body must be ${accepted.map((kind) => (kind === 'json' ? 'JSON (Content-Type: application/json)' : 'a form (application/x-www-form-urlencoded)')).join(' or ')}, not ${type === '' ? 'a body without a Content-Type' : type.slice(0, 64)}`,
  bodyCharset: (charset: string) => `JSON bodies are read as UTF-8 only, not charset=${charset.slice(0, 32)}`,
  bodyTooLarge: (max: number) => `The request body is larger than ${max} bytes`,
  bodyEncoding: (coding: string) => `Content-Encoding ${coding.slice(0, 32)} is not supported; send the body as gzip, deflate or identity`,
  bodyNotDecodable: (encoding: string) => `The request body is not valid ${encoding.slice(0, 64)} as its Content-Encoding says`,
  bodyNotUtf8: 'The request body is not valid UTF-8',
  bodyNotJson: 'The request body is not valid JSON',
  bodyTooDeep: (max: number) => `The request body nests arrays and objects deeper than ${max} levels`,
  bodyUnreadable: 'The request body could not be read to its end',
  notAnObject: 'The body must be a JSON object',
  oneMessage: 'Send one JSON-RPC message per request',
  internal: 'Internal server error',

  // POST /jobs (docs/example-service.md)
  idempotencyKeyMalformed: 'Idempotency-Key must be 1-255 printable ASCII characters',
  idempotencyKeyReused: 'This Idempotency-Key was used with a different request body',
  idempotencyKeyInUse: 'A request with this Idempotency-Key is still being processed; retry shortly',
  unknownField: (field: string) => `Unknown field "${field.slice(0, 64)}"`,
  oneSource: 'Give exactly one of video_ids, channel_id or playlist_id',
  videoIds: 'video_ids must be a non-empty array of video ids',
  videoIdsTooLong: (max: number) => `video_ids may hold at most ${max} entries`,
  videoIdAt: (index: number) => `video_ids[${index}] is not a video id (11 characters of A-Z a-z 0-9 _ -)`,
  channelId: 'channel_id must be "UC" + 22 id characters',
  playlistId: 'playlist_id must be "PL" + 16-32 id characters',
  includeComments: 'include_comments must be true or false',
  bulkNotOnPlan: (plan: string) => `The ${plan} plan cannot create bulk jobs through the API`,
  videosPerJob: (max: number, resolved: number) => `A job takes 1 to ${max} videos; this one resolved to ${resolved}`,
  tooManyVideos: (max: number) => `A job takes at most ${max} videos`,
  jobLimit: (active: number, cap: number) => `Active job limit reached: ${active} of ${cap} jobs are running`,

  // job reads
  noJob: (id: string) => `No job "${id.slice(0, 64)}" for this account`,
  page: 'offset and limit must be whole numbers (limit at most 1000)',

  // website collections (docs/example-service.md#bulk-jobs)
  videoId: 'video_id must be a video id (11 characters of A-Z a-z 0-9 _ -)',
  collectionLimit: (min: number, max: number) => `limit must be a whole number of credits ${min}..${max}`,
  collectionRefused: (reason: string) => `The collection was refused (${reason})`,

  // the website's cookie rule and forms (web/cookieRule.ts, web/csrf.ts)
  crossOrigin: (origin: string) => `A request from ${origin.slice(0, 100)} may not act with this site's session cookie`,
  staleForm: 'This form has expired or did not come from this site; reload the page and send it again',
  noTranscript: (id: string) => `No saved transcript "${id.slice(0, 64)}" for this account`,

  // admin
  unknownJob: (id: string) => `No job "${id.slice(0, 64)}"`,
  signupAt: 'signup_at must be an ISO 8601 date or ms since the epoch',
  processCount: 'count must be a whole number 1..10000',

  // admin: grants, adjustments and refunds (api/credits.ts)
  grantAmount: 'amount must be a whole number of credits, at least 1',
  grantKind: 'kind must be paid, promotional or adjustment',
  priority: (max: number) => `priority must be a whole number 0..${max} (lower is spent first)`,
  instantField: (field: string) => `${field} must be an ISO 8601 date or ms since the epoch`,
  expiresAfter: 'expires_at must be after effective_at',
  reason: (max: number) => `reason must be text of at most ${max} characters`,
  reasonRequired: (max: number) => `reason is required: why the credits change, at most ${max} characters`,
  operationId: 'operation_id must be 1-255 printable ASCII characters',
  adjustAmount: 'amount must be a whole number other than 0: +n adds credits, -n takes them',
  refundRequestId: 'request_id must be the id of the charged request (its X-Request-Id)',
  refundAmount: 'amount must be a whole number of credits, at least 1; leave it out to refund what is left of the charge',
  endedFlag: 'ended must be true or false',
  grantLimit: 'This account has as many live or pending grants as it may hold; void one, or wait until one is used up or expires',
  noGrant: (id: string) => `No grant "${id.slice(0, 64)}" for this account`,
  unknownCharge: (id: string, days: number) =>
    `No charge made by request "${id.slice(0, 64)}" on this account that can still be refunded (a charge is refundable for ${days} days)`,
  exceedsCharge: (id: string) => `The refund is more than what is left of the charge made by request "${id.slice(0, 64)}"; it may have been refunded already`,
} as const;
