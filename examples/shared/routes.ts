/**
 * Every endpoint of SPEC §9 as one table of method, path (Express/Koa syntax) and neutral
 * handler, with the guard options each needs. Adapters register the table as it is.
 */
import { guard, type GuardDeps } from './guard.ts';
import { adminHandlers, type AdminDeps } from './handlers/admin.ts';
import { catalogHandlers } from './handlers/catalog.ts';
import { getComments } from './handlers/comments.ts';
import { createJob, type CreateJobDeps } from './handlers/createJob.ts';
import { jobHandlers } from './handlers/jobs.ts';
import { getTranscript } from './handlers/transcript.ts';
import { getUsage } from './handlers/usage.ts';
import { webHandlers, type WebDeps } from './handlers/web.ts';
import type { Handler } from './http.ts';

export interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  handler: Handler;
}

export type RouteDeps = GuardDeps &
  CreateJobDeps &
  WebDeps &
  Omit<AdminDeps, 'adminToken'> & {
    adminToken?: string;
    mcp?: Handler;
    /** The free catalog reads are served while Redis is unreachable (SPEC §8, opt-in). */
    failOpenFree?: boolean;
  };

export function buildRoutes(deps: RouteDeps): Route[] {
  const jobs = jobHandlers(deps);
  const catalog = catalogHandlers(deps.platform);
  const web = webHandlers(deps);
  const g = (handler: Parameters<typeof guard>[1], options?: Parameters<typeof guard>[2]) => guard(deps, handler, options);
  // Only the catalog reads: they spend nothing and the fake platform needs no Redis. Usage,
  // jobs and everything charged stay closed.
  const free = { failOpen: deps.failOpenFree ?? false };
  const routes: Route[] = [
    { method: 'GET', path: '/transcript/:id', handler: g(getTranscript(deps), { credits: 1 }) },
    { method: 'GET', path: '/api/v1/comments/:videoId', handler: g(getComments(deps), { credits: 1 }) },
    { method: 'GET', path: '/api/v1/usage', handler: g(getUsage(deps.tollgate), { count: false }) },
    { method: 'GET', path: '/api/v1/search', handler: g(catalog.search, free) },
    { method: 'GET', path: '/api/v1/videos/:id', handler: g(catalog.video, free) },
    { method: 'GET', path: '/api/v1/channels/:id/videos', handler: g(catalog.channelVideos, free) },
    { method: 'GET', path: '/api/v1/playlists/:id/videos', handler: g(catalog.playlistVideos, free) },
    { method: 'POST', path: '/jobs', handler: g(createJob(deps)) },
    { method: 'GET', path: '/jobs', handler: g(jobs.list) },
    { method: 'GET', path: '/jobs/:id', handler: g(jobs.get) },
    { method: 'GET', path: '/jobs/:id/results', handler: g(jobs.results) },
    { method: 'DELETE', path: '/jobs/:id', handler: g(jobs.cancel) },
    { method: 'POST', path: '/web/login', handler: web.login },
    { method: 'POST', path: '/web/logout', handler: web.logout },
    { method: 'POST', path: '/web/collections', handler: g(web.createCollection, { accept: 'session' }) },
    { method: 'GET', path: '/web/collections/:id', handler: g(jobs.get, { accept: 'session' }) },
    { method: 'DELETE', path: '/web/collections/:id', handler: g(jobs.cancel, { accept: 'session' }) },
  ];
  if (deps.mcp) {
    // Stateless Streamable HTTP: no server-initiated stream (GET) and no session to end (DELETE).
    const onlyPost: Handler = async () => ({ status: 405, headers: { Allow: 'POST' }, body: undefined });
    routes.push(
      { method: 'POST', path: '/mcp', handler: deps.mcp },
      { method: 'GET', path: '/mcp', handler: onlyPost },
      { method: 'DELETE', path: '/mcp', handler: onlyPost },
    );
  }
  if (deps.adminToken) {
    const admin = adminHandlers({ ...deps, adminToken: deps.adminToken });
    routes.push(
      { method: 'POST', path: '/admin/accounts', handler: admin.createAccount },
      { method: 'POST', path: '/admin/accounts/:id/cycles', handler: admin.startCycle },
      { method: 'POST', path: '/admin/accounts/:id/plan', handler: admin.changePlan },
      { method: 'POST', path: '/admin/accounts/:id/oauth-tokens', handler: admin.oauthToken },
      { method: 'POST', path: '/admin/jobs/:id/process', handler: admin.processJob },
      { method: 'POST', path: '/admin/sweep', handler: admin.sweep },
    );
  }
  return routes;
}
