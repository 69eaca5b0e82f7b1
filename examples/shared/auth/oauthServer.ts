/**
 * How an MCP client finds out how to log in, and the example's own minimal authorization
 * server (MCP authorization: RFC 9728, RFC 8414, OAuth 2.1 client credentials).
 *
 * - GET /.well-known/oauth-protected-resource (RFC 9728): this service is a protected resource
 *   (REST and MCP take the same bearer tokens) and names its authorization server. The MCP
 *   401 points at it (`WWW-Authenticate: Bearer resource_metadata="…"`, mcp/server.ts). The
 *   path-suffixed `/.well-known/oauth-protected-resource/mcp` describes the MCP endpoint alone,
 *   for clients that ask there first.
 * - GET /.well-known/oauth-authorization-server (RFC 8414): the token endpoint and what it takes.
 * - POST /oauth/token: the client-credentials grant. A client is an account: `client_id` is the
 *   account id and `client_secret` one of its API keys (HTTP Basic or form fields). The token is
 *   the demo verifier's (oauth.ts): it resolves to the same account, so it shares the `api`
 *   counter and the credits. A secret that does not check out is a failed key check of the
 *   client's IP (failedAuth.ts) like any other.
 *
 * There is no authorization endpoint: nothing here signs a person in. RFC 8414 lets a server
 * without one leave it out, but the official MCP SDK's metadata schema requires the field, so
 * it is given, and /oauth/authorize answers `unsupported_response_type` (no response type is
 * supported: `response_types_supported` is empty).
 */
import type { Tollgate } from 'tollgate';
import type { FailedAuth } from './failedAuth.ts';
import { json, type ApiRequest, type Handler, type HttpReply } from '../http/handler.ts';
import type { DemoOAuth } from './oauth.ts';
import type { Site } from '../web/site.ts';
import { formFields, isForm } from '../web/forms.ts';

export interface OAuthServerDeps {
  tollgate: Tollgate;
  failedAuth: FailedAuth;
  oauth: DemoOAuth;
  site: Site;
}

export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';
export const AUTHORIZATION_SERVER_PATH = '/.well-known/oauth-authorization-server';
export const TOKEN_PATH = '/oauth/token';
export const AUTHORIZE_PATH = '/oauth/authorize';

/** The URL an MCP 401 names in `WWW-Authenticate: Bearer resource_metadata="…"`. */
export function resourceMetadataUrl(site: Site, request: ApiRequest): string {
  return `${site.origin(request)}${PROTECTED_RESOURCE_PATH}`;
}

/** A token's lifetime: an hour, then the client asks again with its credentials. */
const TOKEN_TTL_MS = 3_600_000;

export function oauthServer(deps: OAuthServerDeps) {
  const { site } = deps;
  const metadata = (body: unknown): HttpReply => json(200, body, { 'Cache-Control': 'public, max-age=3600' });
  const resource = (request: ApiRequest, path: string) => ({
    resource: `${site.origin(request)}${path}`,
    authorization_servers: [site.origin(request)],
    bearer_methods_supported: ['header'],
    resource_name: 'Video Transcripts API',
    resource_documentation: `${site.origin(request)}/`,
  });

  const protectedResource: Handler = async (request) => metadata(resource(request, ''));
  const protectedMcp: Handler = async (request) => metadata(resource(request, '/mcp'));

  const authorizationServer: Handler = async (request) => {
    const issuer = site.origin(request);
    return metadata({
      issuer,
      token_endpoint: `${issuer}${TOKEN_PATH}`,
      authorization_endpoint: `${issuer}${AUTHORIZE_PATH}`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      response_types_supported: [],
      service_documentation: `${issuer}/`,
    });
  };

  const authorize: Handler = async () =>
    oauthError(400, 'unsupported_response_type', `This server issues tokens only through the client_credentials grant at ${TOKEN_PATH}`);

  const token: Handler = async (request) => {
    const blocked = deps.failedAuth.blocked(request);
    if (blocked) return blocked;
    if (!isForm(request)) return oauthError(400, 'invalid_request', 'The token request must be application/x-www-form-urlencoded');
    const fields = formFields(request);
    const basic = basicCredentials(request.headers.authorization);
    if (basic === null) return oauthError(400, 'invalid_request', 'The Authorization header is not valid HTTP Basic');
    const clientId = basic?.id ?? fields.client_id;
    const secret = basic?.secret ?? fields.client_secret;
    if (clientId === undefined || secret === undefined) {
      return oauthError(401, 'invalid_client', 'Client authentication is required: client_id is the account id, client_secret one of its API keys');
    }
    if (fields.grant_type === undefined) return oauthError(400, 'invalid_request', 'grant_type is required');
    if (fields.grant_type !== 'client_credentials') return oauthError(400, 'unsupported_grant_type', 'Only the client_credentials grant is supported');
    const own = [site.origin(request), `${site.origin(request)}/`, `${site.origin(request)}/mcp`];
    if (fields.resource !== undefined && !own.includes(fields.resource)) {
      return oauthError(400, 'invalid_target', `Tokens from this server are for ${own[0]} only`);
    }
    const verified = await deps.tollgate.keys.verify(secret, { surface: 'api', usage: true });
    if (!verified.ok || verified.subject !== clientId) {
      const refused = oauthError(
        401,
        'invalid_client',
        'The client credentials are not valid',
        basic === undefined ? {} : { 'WWW-Authenticate': 'Basic realm="oauth"' },
      );
      return deps.failedAuth.refuse(request, refused);
    }
    return json(200, deps.oauth.issue(clientId, TOKEN_TTL_MS), { 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  };

  return { protectedResource, protectedMcp, authorizationServer, authorize, token };
}

/** RFC 6749 §5.2: the OAuth error body (not the service's error body: OAuth clients read this one). */
function oauthError(status: number, error: string, description: string, headers: Record<string, string> = {}): HttpReply {
  return json(status, { error, error_description: description }, { 'Cache-Control': 'no-store', Pragma: 'no-cache', ...headers });
}

/** client_secret_basic: undefined without the header, null when it is not readable Basic. */
function basicCredentials(header: string | undefined): { id: string; secret: string } | null | undefined {
  if (header === undefined) return undefined;
  const encoded = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)?.[1];
  if (encoded === undefined) return null;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  try {
    // RFC 6749 §2.3.1: both parts are form-urlencoded before they are joined.
    return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')) };
  } catch {
    return null;
  }
}
