/**
 * Every endpoint of the service as one table of method, path (Express/Koa syntax), price and
 * handler. A route's price is written here once: the guard admits the request and pre-checks
 * the credits at that price, and the handler charges the price it is handed (auth/guard.ts Call).
 * Adapters register the table as it is.
 */
import type { Price } from './auth/credentials.ts';
import { guard, type AuthedHandler, type GuardDeps, type GuardOptions } from './auth/guard.ts';
import { adminHandlers, type AdminDeps } from './api/admin.ts';
import { creditHandlers } from './api/credits.ts';
import { catalogHandlers } from './api/catalog.ts';
import { getComments } from './api/comments.ts';
import { createJob, type CreateJobDeps } from './jobs/createJob.ts';
import { jobHandlers } from './jobs/savedJobs.ts';
import { getTranscript } from './api/transcript.ts';
import { getUsage } from './api/usage.ts';
import { webHandlers, type WebDeps } from './web/webApi.ts';
import type { Handler } from './http/handler.ts';
import { AUTHORIZATION_SERVER_PATH, AUTHORIZE_PATH, oauthServer, PROTECTED_RESOURCE_PATH, TOKEN_PATH } from './auth/oauthServer.ts';
import { FORM_BODY } from './web/forms.ts';
import { website, type WebsiteDeps } from './web/routes.ts';

export interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  handler: Handler;
  /**
   * The bodies the route reads: JSON unless it says otherwise. The website's forms and the
   * OAuth token endpoint read `application/x-www-form-urlencoded` (web/forms.ts); sign-in reads both.
   */
  bodies?: ReadonlyArray<'json' | 'form'>;
}

export type RouteDeps = GuardDeps &
  CreateJobDeps &
  WebDeps &
  Omit<AdminDeps, 'adminToken'> &
  Omit<WebsiteDeps, 'transcript' | 'createCollection' | 'createJob' | 'cancelJob' | 'session'> & {
    adminToken?: string;
    mcp?: Handler;
    /** The free catalog reads are served while Redis is unreachable (opt-in; docs/example-service.md#errors). */
    failOpenFree?: boolean;
  };

/** Counts one request on the caller's surface and spends nothing. */
const FREE: Price = { requests: 1, credits: 0 };
/** Counts nothing and spends nothing: usage reads (docs/example-service.md#rate-limits). */
const NOT_COUNTED: Price = { requests: 0, credits: 0 };
/** One credit per unit of work (a transcript, a nonempty comments page), pre-checked before any work (docs/example-service.md#transcripts-and-comments). */
const ONE_CREDIT: Price = { requests: 1, credits: 1 };

export function buildRoutes(deps: RouteDeps): Route[] {
  const jobs = jobHandlers(deps);
  const catalog = catalogHandlers(deps.platform);
  const web = webHandlers(deps);
  // The website's pages run the same handlers as the JSON routes below (web/routes.ts).
  const site = website({
    ...deps,
    transcript: getTranscript(deps),
    createCollection: web.createCollection,
    createJob: createJob(deps),
    cancelJob: jobs.cancel,
    session: web,
  });
  const g = (price: Price, handler: AuthedHandler, options: Omit<GuardOptions, 'price'> = {}) => guard(deps, handler, { price, ...options });
  // Only the catalog reads: they spend nothing and the fake platform needs no Redis. Usage,
  // jobs and everything charged stay closed.
  const free = { failOpen: deps.failOpenFree ?? false };
  const session = { accept: 'session' } as const;
  const routes: Route[] = [
    { method: 'GET', path: '/transcript/:id', handler: g(ONE_CREDIT, getTranscript(deps)) },
    { method: 'GET', path: '/api/v1/comments/:videoId', handler: g(ONE_CREDIT, getComments(deps)) },
    { method: 'GET', path: '/api/v1/usage', handler: g(NOT_COUNTED, getUsage(deps)) },
    { method: 'GET', path: '/api/v1/search', handler: g(FREE, catalog.search, free) },
    { method: 'GET', path: '/api/v1/videos/:id', handler: g(FREE, catalog.video, free) },
    { method: 'GET', path: '/api/v1/channels/:id/videos', handler: g(FREE, catalog.channelVideos, free) },
    { method: 'GET', path: '/api/v1/playlists/:id/videos', handler: g(FREE, catalog.playlistVideos, free) },
    // A job reserves its credits as a hold (jobs/createJob.ts); the request itself is one request.
    { method: 'POST', path: '/jobs', handler: g(FREE, createJob(deps)) },
    { method: 'GET', path: '/jobs', handler: g(FREE, jobs.list) },
    { method: 'GET', path: '/jobs/:id', handler: g(FREE, jobs.get) },
    { method: 'GET', path: '/jobs/:id/results', handler: g(FREE, jobs.results) },
    { method: 'DELETE', path: '/jobs/:id', handler: g(FREE, jobs.cancel) },
    { method: 'POST', path: '/web/login', handler: site.login, bodies: ['json', 'form'] },
    { method: 'POST', path: '/web/logout', handler: site.logout, bodies: ['json', 'form'] },
    // A collection reserves the user's limit L as a budget hold (web/webApi.ts).
    { method: 'POST', path: '/web/collections', handler: g(FREE, web.createCollection, session) },
    { method: 'GET', path: '/web/collections/:id', handler: g(FREE, jobs.get, session) },
    { method: 'DELETE', path: '/web/collections/:id', handler: g(FREE, jobs.cancel, session) },
    ...site.routes,
  ];
  // How MCP clients find out how to log in, and the demo's authorization server (auth/oauthServer.ts).
  const oauth = oauthServer(deps);
  routes.push(
    { method: 'GET', path: PROTECTED_RESOURCE_PATH, handler: oauth.protectedResource },
    { method: 'GET', path: `${PROTECTED_RESOURCE_PATH}/mcp`, handler: oauth.protectedMcp },
    { method: 'GET', path: AUTHORIZATION_SERVER_PATH, handler: oauth.authorizationServer },
    { method: 'GET', path: AUTHORIZE_PATH, handler: oauth.authorize },
    { method: 'POST', path: TOKEN_PATH, handler: oauth.token, bodies: FORM_BODY },
  );
  if (deps.mcp) {
    // Stateless Streamable HTTP: no server-initiated stream (GET) and no session to end
    // (DELETE), so those are 405 with Allow: POST like any method a path does not serve.
    // Each tools/call is priced by its tool (mcp/tools.ts TOOL_PRICES).
    routes.push({ method: 'POST', path: '/mcp', handler: deps.mcp });
  }
  if (deps.adminToken) {
    const admin = adminHandlers({ ...deps, adminToken: deps.adminToken });
    // The back office's credits: grants, voids, adjustments, refunds by request id (api/credits.ts).
    const credits = creditHandlers({ ...deps, adminToken: deps.adminToken });
    routes.push(
      { method: 'POST', path: '/admin/accounts', handler: admin.createAccount },
      { method: 'POST', path: '/admin/accounts/:id/cycles', handler: admin.startCycle },
      { method: 'POST', path: '/admin/accounts/:id/plan', handler: admin.changePlan },
      { method: 'POST', path: '/admin/accounts/:id/oauth-tokens', handler: admin.oauthToken },
      { method: 'POST', path: '/admin/jobs/:id/process', handler: admin.processJob },
      { method: 'POST', path: '/admin/sweep', handler: admin.sweep },
      { method: 'GET', path: '/admin/accounts/:id/grants', handler: credits.list },
      { method: 'POST', path: '/admin/accounts/:id/grants', handler: credits.grant },
      { method: 'POST', path: '/admin/accounts/:id/grants/:grant_id/void', handler: credits.voidGrant },
      { method: 'POST', path: '/admin/accounts/:id/adjustments', handler: credits.adjust },
      { method: 'POST', path: '/admin/accounts/:id/refunds', handler: credits.refund },
    );
  }
  return routes;
}
