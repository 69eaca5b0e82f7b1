// Writes the dashboard screenshot shown in examples/README.md (examples/dashboard.png):
//   npm run example test/examples/browser/screenshot.ts [path]
// An Express example server on a throwaway redis-server (or REDIS_URL) with an injected clock:
// a starter account that spent credits on most days of its cycle, holds a top-up pack and a
// promotion, has a comments collection and a bulk job under way and one collection finished
// with its refund; then Chromium signs in with the form and takes the dashboard.
import { fileURLToPath } from 'node:url';
import { listenExpress } from '../../../examples/express/app.ts';
import { redisFromEnv } from '../../../examples/shared/redis/fromEnv.ts';
import { createService } from '../../../examples/shared/service.ts';
import { launchChromium } from '../../helpers/browser.ts';

const DAY = 86_400_000;
const out = process.argv[2] ?? fileURLToPath(new URL('../../../examples/dashboard.png', import.meta.url));
const today = Date.UTC(2026, 0, 15, 15, 30);
let now = today - 16 * DAY;

const redis = await redisFromEnv(process.env);
if (!('url' in redis.target)) throw new Error('Give REDIS_URL (or nothing), not a cluster');
const service = await createService({
  redisUrl: redis.target.url,
  prefix: `shot${Date.now()}`,
  clock: () => now,
  worker: 'manual',
  sweepEveryMs: 0,
  adminToken: 'shot',
});
const server = await listenExpress(service, 0);
const browser = await launchChromium();
try {
  const { accountId, apiKey } = await service.createAccount('starter');
  const tg = service.tollgate;
  // A cycle's worth of use: transcripts and comment pages most days, nothing on a few.
  const perDay = [12, 31, 8, 0, 22, 45, 17, 9, 0, 0, 26, 38, 14, 52, 19, 7];
  for (const [i, credits] of perDay.entries()) {
    now = today - (16 - i) * DAY + 3_600_000 * (9 + (i % 6));
    if (credits > 0) await tg.credits.charge(accountId, { required: credits });
  }
  now = today - 2 * 3_600_000;
  const admin = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { authorization: 'Bearer shot', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const login = await fetch(`${server.url}/web/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: apiKey }),
  });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const web = async (path: string, body: unknown) =>
    (
      await fetch(`${server.url}${path}`, { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    ).json() as Promise<{ id: string }>;
  // A top-up pack bought last week and a promotion that ends before the cycle does.
  await admin(`/admin/accounts/${accountId}/grants`, { amount: 5000, kind: 'paid', reason: 'Top-up pack', operation_id: 'order_1001' });
  await admin(`/admin/accounts/${accountId}/grants`, { amount: 500, kind: 'promotional', expires_at: today + 6 * DAY, reason: 'Welcome offer' });
  await tg.credits.charge(accountId, { required: 35 });
  const finished = await web('/web/collections', { video_id: 'nocomm00001', limit: 40 });
  await admin(`/admin/jobs/${finished.id}/process`, { count: 10 });
  now = today - 4 * 60_000;
  const bulk = await fetch(`${server.url}/jobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ playlist_id: 'PLexampleplaylist0001', include_comments: true }),
  }).then((r) => r.json() as Promise<{ id: string }>);
  await admin(`/admin/jobs/${bulk.id}/process`, { count: 23 });
  now = today - 2 * 60_000;
  const running = await web('/web/collections', { video_id: 'dQw4w9WgXcQ', limit: 120 });
  await admin(`/admin/jobs/${running.id}/process`, { count: 41 });
  // Within the jobs' 5-minute lease: they are still running.
  now = today;

  const page = await browser.context.newPage();
  await page.goto(`${server.url}/`);
  await page.getByLabel('Your API key').fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${server.url}/dashboard`);
  await page.screenshot({ path: out, fullPage: true });
  console.log(`dashboard of ${accountId} written to ${out}`);
} finally {
  await browser.close();
  await server.close();
  await service.close();
  await redis.stop();
}
