/**
 * HTML replies: eta templates (web/templates/*.eta, escaped by eta: `<%= %>` escapes, and `<%~ %>`
 * is used only for other templates' output), with the headers every page carries: a
 * Content-Security-Policy that lets the page load only this site's own scripts, styles and
 * images (no inline script or style at all), no framing, no sniffing, and a Referer only for
 * this site's own requests.
 */
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { HttpReply } from '../http/handler.ts';
import { assetUrl } from './assets.ts';
import { format } from './format.ts';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export const PAGE_HEADERS: Record<string, string> = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
  // Pages show an account's own numbers: never kept by a shared cache, always fresh on Back.
  'Cache-Control': 'no-store',
};

const ASSETS = { css: assetUrl('site.css'), js: assetUrl('site.js'), icon: assetUrl('icon.svg') };

const eta = new Eta({
  views: fileURLToPath(new URL('./templates', import.meta.url)),
  cache: true,
  autoEscape: true,
  autoTrim: [false, 'nl'],
});

/** What every page's layout reads. */
export interface PageData {
  title: string;
  /** Which entry of the navigation is this page; null outside the signed-in site. */
  nav: 'dashboard' | 'transcripts' | 'collections' | 'bulk' | null;
  /** Show the signed-in navigation and the sign-out button. */
  signedIn: boolean;
  /** Refresh the page every few seconds when scripts are off (a job runs on it). */
  refreshWithoutScript?: boolean;
  /** The JSON the progress script polls while a job on the page runs. */
  poll?: string;
  [name: string]: unknown;
}

export function render(template: string, data: PageData, status = 200, headers: Record<string, string> = {}): HttpReply {
  const body = eta.render(`./${template}`, { ...data, fmt: format, assets: ASSETS });
  return { status, headers: { ...PAGE_HEADERS, ...headers }, body };
}

export function redirect(location: string, headers: Record<string, string> = {}): HttpReply {
  return { status: 303, headers: { Location: location, 'Cache-Control': 'no-store', ...headers }, body: undefined };
}
