/**
 * The website's routes, served by both servers from the shared route table (routes.ts): the
 * public home page and assets, the sign-in and sign-out that take forms and JSON alike, and
 * the signed-in pages. A page's price is written here beside it: a page view counts one request
 * on the `web` surface (its own counter; docs/example-service.md#plans) and spends nothing, except fetching a
 * transcript (1 credit, the price of GET /transcript/:id). Assets count nothing.
 */
import type { Price } from '../auth/credentials.ts';
import type { Route } from '../routes.ts';
import { serveAsset } from './assets.ts';
import { FORM_BODY } from './forms.ts';
import { page, type PageGuardDeps } from './page.ts';
import { pageHandlers, type PageDeps } from './pages.ts';
import { signinHandlers, type SessionHandlers, type SigninDeps } from './signin.ts';

/** A page view: one request on `web`, no credit. */
const PAGE: Price = { requests: 1, credits: 0 };
/** A transcript fetched from its page: as GET /transcript/:id, 1 credit pre-checked and charged on delivery (docs/example-service.md#transcripts-and-comments). */
const TRANSCRIPT: Price = { requests: 1, credits: 1 };

export type WebsiteDeps = PageGuardDeps & PageDeps & SigninDeps & { session: SessionHandlers };

export interface Website {
  /** POST /web/login and /web/logout: the JSON API's, which also take the site's forms. */
  login: Route['handler'];
  logout: Route['handler'];
  routes: Route[];
}

export function website(deps: WebsiteDeps): Website {
  const signin = signinHandlers(deps, deps.session);
  const pages = pageHandlers(deps, { transcript: TRANSCRIPT });
  const view = (handler: Parameters<typeof page>[1], price = PAGE) => page(deps, handler, { price });
  const form = (handler: Parameters<typeof page>[1], price = PAGE) => page(deps, handler, { price, form: true });
  return {
    login: signin.login,
    logout: signin.logout,
    routes: [
      { method: 'GET', path: '/', handler: signin.home },
      { method: 'GET', path: '/assets/:name', handler: serveAsset },
      { method: 'GET', path: '/dashboard', handler: view(pages.dashboard) },
      { method: 'GET', path: '/transcripts', handler: view(pages.transcriptForm) },
      { method: 'POST', path: '/transcripts', handler: form(pages.fetchTranscript, TRANSCRIPT), bodies: FORM_BODY },
      { method: 'GET', path: '/transcripts/:id', handler: view(pages.transcriptPage) },
      { method: 'GET', path: '/transcripts/:id/download', handler: view(pages.transcriptDownload) },
      { method: 'GET', path: '/collections', handler: view(pages.collections) },
      { method: 'POST', path: '/collections', handler: form(pages.createCollection), bodies: FORM_BODY },
      { method: 'GET', path: '/collections/:id', handler: view(pages.collection) },
      { method: 'POST', path: '/collections/:id/cancel', handler: form(pages.cancelCollection), bodies: FORM_BODY },
      { method: 'GET', path: '/collections/:id/export', handler: view(pages.exportJob) },
      { method: 'GET', path: '/bulk', handler: view(pages.bulk) },
      { method: 'POST', path: '/bulk', handler: form(pages.createBulk), bodies: FORM_BODY },
      { method: 'POST', path: '/bulk/:id/cancel', handler: form(pages.cancelBulk), bodies: FORM_BODY },
      { method: 'GET', path: '/bulk/:id/export', handler: view(pages.exportJob) },
    ],
  };
}
