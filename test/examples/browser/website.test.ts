// The website in a real headless Chromium, against both example servers: a person
// signs in with the form, reads the balance and the grants in spend order, fetches a transcript and sees the balance drop by
// one, sees a low-balance notice once a threshold fired, starts a comments collection and
// watches it finish with its refund, cancels a bulk job, and meets the 429 page when the web
// budget runs out. Every page is checked for script errors and CSP violations (Chromium
// reports both on the console).
import { readFileSync } from 'node:fs';
import type { ConsoleMessage, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXAMPLE_PLANS } from '../../../examples/shared/plans.ts';
import { launchChromium, type Browser } from '../../helpers/browser.ts';
import { ADAPTERS, type Harness, startHarness, videoIds } from '../contract/harness.ts';

const VIDEO = 'dQw4w9WgXcQ';
/** Browsers are slow to start on 2 shared cores, and the progress views poll every 3 s. */
const SLOW = { timeout: 120_000 };
/** The example's plans and one whose website budget is 4 requests a minute. */
const PLANS = {
  ...EXAMPLE_PLANS,
  tiny: { ...EXAMPLE_PLANS.starter, limits: { api: EXAMPLE_PLANS.starter.limits.api, web: [{ limit: 4, windowMs: 60_000 }] } },
};

// Launched once for the file; when there is no Chromium every test fails with the reason.
let launched: Promise<Browser>;
let browser: Browser | undefined;
beforeAll(async () => {
  launched = launchChromium();
  browser = await launched.catch(() => undefined);
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

describe.each(ADAPTERS)('$name server in Chromium', (adapter) => {
  let h: Harness;
  let page: Page;
  let problems: string[];
  beforeAll(async () => {
    h = await startHarness(adapter, 'browser', { plans: PLANS });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });
  afterEach(async () => {
    await page?.close();
    await browser?.context.clearCookies();
    // Script errors, CSP violations and failed loads show on the console.
    expect(problems).toEqual([]);
  });

  async function open(path: string): Promise<Page> {
    problems = [];
    page = await (await launched).context.newPage();
    page.on('console', (message: ConsoleMessage) => {
      // The 429 page answers with its status, which the browser logs itself.
      if (message.type() === 'error' && !/status of 429/.test(message.text())) problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(`${h.url}${path}`);
    return page;
  }

  /** Signs in as a person does: the form on `/`, then the dashboard. */
  async function signIn(plan = 'starter'): Promise<{ id: string; key: string }> {
    const account = await h.account(plan);
    await open('/');
    await page.getByLabel('Your API key').fill(account.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${h.url}/dashboard`);
    return account;
  }
  /** Follows an entry of the site's navigation bar. */
  const nav = (name: string) => page.getByRole('navigation', { name: 'Site' }).getByRole('link', { name, exact: true }).click();
  const text = async (testId: string) => (await page.getByTestId(testId).first().textContent())?.trim();

  it('signs in with the form and reads the balance on the dashboard', SLOW, async () => {
    await signIn('free');
    expect(await page.title()).toBe('Dashboard · Video Transcripts API');
    expect(await text('plan')).toBe('free');
    expect(await text('balance')).toBe('30');
    expect(await text('allowance')).toBe('30');
    // One bar per day of the 30-day cycle (15 Jan 12:00 to 14 Feb 12:00 UTC touches 31 days); none spent yet.
    expect(await page.getByTestId('spend-chart').locator('rect.bar, rect.bar-future').count()).toBe(31);
    expect(await page.getByTestId('spend-chart').locator('rect.bar').first().getAttribute('data-spent')).toBe('0');
    expect(await page.getByTestId('no-active').isVisible()).toBe(true);
  });

  it('lists the grants with their expiry on the dashboard, in the order they are spent', SLOW, async () => {
    const { id } = await signIn();
    await h.admin(`/admin/accounts/${id}/grants`, { amount: 2000, kind: 'paid', reason: 'Top-up pack' });
    await h.admin(`/admin/accounts/${id}/grants`, { amount: 50, kind: 'promotional', expires_at: h.clock.now + 5 * 86_400_000, reason: 'Welcome offer' });
    await page.reload();
    expect(await text('available')).toBe('3,050');
    const rows = page.getByTestId('source');
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-grant-id')))).toEqual(['g2', 'cycle:1', 'g1']);
    expect(await rows.nth(0).locator('[data-field="order"]').textContent()).toBe('1.');
    expect(await rows.nth(0).textContent()).toContain('Welcome offer');
    expect(await rows.nth(2).locator('[data-field="expires"]').textContent()).toBe('never');
    expect(await page.getByText('Each charge is taken from the first row with credits left').isVisible()).toBe(true);
  });

  it('sees a low-balance notice on the dashboard once 80% of the credits are used, read out as a status', SLOW, async () => {
    const { id } = await signIn();
    expect(await page.getByTestId('low-balance').count()).toBe(0);
    await h.leave(id, 200);
    // The dashboard's consumer group notes the threshold within moments; a reload shows it.
    const notice = page.getByRole('status').filter({ hasText: 'Your credits are running low.' });
    await vi.waitFor(
      async () => {
        await page.reload();
        expect(await notice.count()).toBe(1);
      },
      { timeout: 15_000, interval: 500 },
    );
    expect(await notice.textContent()).toContain("80% of this cycle's credits were used.");
    expect(await text('low-balance-left')).toBe('200 credits');
    // Styled as a warning, from the stylesheet (the CSP allows no inline style).
    expect(
      await notice.evaluate(
        (el) => (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(el).backgroundColor,
      ),
    ).toBe('rgb(255, 248, 230)');
  });

  it('fetches a transcript, sees the balance drop by one, and downloads it', SLOW, async () => {
    const { id } = await signIn();
    const before = Number((await text('balance'))!.replace(/,/g, ''));
    await nav('Transcripts');
    expect(await text('price')).toBe('1 credit');
    await page.getByLabel('Video id').fill(VIDEO);
    await page.getByLabel('Format').selectOption('srt');
    await page.getByRole('button', { name: /Get transcript/ }).click();
    await page.waitForURL(/\/transcripts\/tr_/);
    expect(Number(await text('balance'))).toBe(before - 1);
    expect(await text('transcript')).toMatch(/^1\n00:00:01,231 --> 00:00:03,654/);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download').click()]);
    expect(download.suggestedFilename()).toBe(`${VIDEO}.srt`);
    expect(readFileSync(await download.path(), 'utf8')).toMatch(/^1\n00:00:01,231 --> 00:00:03,654\n/);
    // A reload shows what was paid for without paying again.
    await page.reload();
    expect(Number(await text('balance'))).toBe(before - 1);
    await nav('Dashboard');
    expect(Number((await text('balance'))!.replace(/,/g, ''))).toBe(before - 1);
    expect((await h.service.tollgate.usage(id)).credits.balance).toBe(before - 1);
  });

  it('starts a comments collection and watches it run and finish with its refund', SLOW, async () => {
    const { id } = await signIn();
    await nav('Comments');
    await page.getByLabel('Video id').fill(VIDEO);
    await page.getByLabel(/Credit limit/).fill('100');
    await page.getByRole('button', { name: 'Start collecting' }).click();
    await page.waitForURL(/\/collections\/job_/);
    const jobId = page.url().split('/').pop()!;
    const polls: number[] = [];
    page.on('request', (request) => {
      if (request.url() === `${h.url}/web/collections/${jobId}`) polls.push(Date.now());
    });
    expect(await page.locator('[data-field="status"]').textContent()).toBe('queued');
    // The worker (manual here) collects 10 pages: the view moves by itself, without a reload.
    const marker = await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = Math.random()));
    await h.admin(`/admin/jobs/${jobId}/process`, { count: 10 });
    await page.locator('[data-field="done"]', { hasText: /^10$/ }).waitFor({ timeout: 15_000 });
    expect(await page.locator('[data-field="status"]').textContent()).toBe('running');
    expect(await page.locator('progress[data-field="progress"]').evaluate((p) => (p as unknown as { value: number }).value)).toBe(10);
    expect(await page.evaluate(() => (globalThis as unknown as { marker: number }).marker)).toBe(marker);
    // It runs out of pages at 63 (3 Top pages and a reply thread per comment): the view ends with the refund.
    await h.admin(`/admin/jobs/${jobId}/process`, { count: 1000 });
    await page.getByTestId('refund').waitFor({ timeout: 15_000 });
    expect(await text('refund')).toBe('refunded 37 credits');
    expect(await text('ended')).toContain('63 pages collected for 63 credits, and 37 credits of the 100 reserved went back to you');
    expect((await h.service.tollgate.usage(id)).credits).toMatchObject({ balance: 937, held: 0 });
    // The view asked at most every 3 s (less a little for the browser's events reaching the test late).
    expect(polls.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < polls.length; i++) expect(polls[i]! - polls[i - 1]!).toBeGreaterThanOrEqual(2_700);
  });

  it('cancels a running bulk job from the list, which shows its progress and refund', SLOW, async () => {
    const { id, key } = await signIn();
    const created = await h.request('/jobs', { key, body: { video_ids: videoIds('vid', 8), include_comments: true } });
    expect(created.status).toBe(201);
    const jobId = created.body.id as string;
    await h.admin(`/admin/jobs/${jobId}/process`, { count: 3 });
    await nav('Bulk jobs');
    const job = page.locator(`[data-job-id="${jobId}"]`);
    expect(await job.locator('progress').evaluate((p) => [(p as unknown as { value: number }).value, (p as unknown as { max: number }).max])).toEqual([3, 8]);
    expect(await job.locator('[data-field="status"]').textContent()).toBe('running');
    await job.getByRole('button', { name: /Cancel/ }).click();
    await page.waitForURL(new RegExp(`/bulk#${jobId}$`));
    const ended = page.locator(`[data-job-id="${jobId}"]`);
    expect(await ended.locator('[data-field="status"]').textContent()).toBe('canceled');
    // 3 delivered with their Top pages (6 credits); the other 5 videos and their pages come back.
    expect(await ended.getByTestId('refund').textContent()).toBe('refunded 10 credits');
    expect((await h.service.tollgate.usage(id)).credits).toMatchObject({ balance: 994, held: 0 });
    const [download] = await Promise.all([page.waitForEvent('download'), ended.getByRole('link', { name: /Download results/ }).click()]);
    expect(download.suggestedFilename()).toBe(`${jobId}.json`);
  });

  it('meets the 429 page when the web budget runs out, and assets never count', SLOW, async () => {
    await signIn('tiny');
    // The dashboard was 1 of the 4 website requests a minute; its stylesheet, script and icon count nothing.
    await nav('Transcripts');
    await nav('Comments');
    await nav('Bulk jobs');
    expect(await page.title()).toBe('Bulk jobs · Video Transcripts API');
    const reply = await page.goto(`${h.url}/dashboard`);
    expect(reply!.status()).toBe(429);
    expect(await page.locator('h1').textContent()).toBe('Slow down a little');
    const retry = Number(await reply!.headerValue('retry-after'));
    expect(await page.locator('main').textContent()).toContain(
      `You have used all 4 website requests your plan allows this minute. Try again in ${retry} second`,
    );
    // Styled all the same: the stylesheet loaded while the budget was spent.
    expect(
      await page
        .locator('header.top')
        .evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(el).backgroundColor),
    ).toBe('rgb(20, 26, 41)');
    h.clock.advance(60_000);
  });

  it('signs out from the navigation and lands on the sign-in page', SLOW, async () => {
    await signIn();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${h.url}/`);
    await page.goto(`${h.url}/dashboard`);
    expect(page.url()).toBe(`${h.url}/`);
    expect(await page.getByRole('button', { name: 'Sign in' }).isVisible()).toBe(true);
  });
});
