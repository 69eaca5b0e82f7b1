/**
 * The site's static files (web/assets/), read once at start-up and served from memory at
 * /assets/<name>: no session, no Redis, nothing counted against the `web` budget. Pages link
 * them with a digest of their content in the query (`/assets/site.css?v=…`), so a browser may
 * keep them for a year and still sees a new file at once.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Handler, HttpReply } from '../http/handler.ts';

const TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml; charset=utf-8',
};

/** Text files only: the adapters send a string body as it is. */
interface Asset {
  body: string;
  type: string;
  url: string;
}

const DIR = fileURLToPath(new URL('./assets/', import.meta.url));

const ASSETS = new Map<string, Asset>(
  readdirSync(DIR)
    .filter((name) => TYPES[extname(name)] !== undefined)
    .map((name) => {
      const body = readFileSync(DIR + name, 'utf8');
      const digest = createHash('sha256').update(body).digest('base64url').slice(0, 12);
      return [name, { body, type: TYPES[extname(name)]!, url: `/assets/${name}?v=${digest}` }];
    }),
);

/** The URL a page links an asset with. */
export function assetUrl(name: string): string {
  const asset = ASSETS.get(name);
  if (asset === undefined) throw new Error(`No asset ${name} in ${DIR}`);
  return asset.url;
}

export const serveAsset: Handler = async (request) => {
  const asset = ASSETS.get(request.params.name ?? '');
  if (asset === undefined) return notFound;
  return {
    status: 200,
    headers: { 'Content-Type': asset.type, 'Cache-Control': 'public, max-age=31536000, immutable', 'X-Content-Type-Options': 'nosniff' },
    body: asset.body,
  };
};

const notFound: HttpReply = {
  status: 404,
  headers: { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' },
  body: 'No such file',
};
