// Progress views of the example website. While a job or collection on the page runs, this
// polls the page's JSON twin (data-poll on <main>: /jobs?limit=… or one job) and moves its
// progress bar and counts; once one ends it reloads the page, so the server shows the refund.
// It asks at most every 3 s and slower when the website budget runs low: it keeps half of
// what is left of the minute for the person using the site (X-RateLimit-Remaining / -Reset).
'use strict';
(() => {
  const main = document.querySelector('main[data-poll]');
  if (!main) return;
  const url = main.getAttribute('data-poll');
  const MIN_MS = 3000;
  const OPEN = new Set(['queued', 'running']);
  const numbers = new Intl.NumberFormat('en-US');

  const set = (root, field, value) => {
    const el = root.querySelector(`[data-field="${field}"]`);
    if (el) el.textContent = typeof value === 'number' ? numbers.format(value) : String(value);
  };

  /** Moves one job's view; true when it has just ended. */
  function update(job) {
    const el = document.querySelector(`[data-job-id="${CSS.escape(String(job.id))}"]`);
    if (!el) return false;
    const bulk = typeof job.videos === 'number';
    const failed = bulk ? job.failed.video_unavailable + job.failed.no_captions : 0;
    const done = bulk ? job.delivered + failed : job.spent;
    const progress = el.querySelector('progress[data-field="progress"]');
    if (progress) progress.value = done;
    set(el, 'status', job.status);
    const badge = el.querySelector('[data-field="status"]');
    if (badge) badge.className = `badge status-${job.status}`;
    set(el, 'done', done);
    set(el, 'spent', job.spent);
    if (bulk) {
      set(el, 'delivered', job.delivered);
      set(el, 'failed', failed);
    } else {
      set(el, 'pages', job.comment_pages);
    }
    return el.getAttribute('data-open') === 'true' && !OPEN.has(job.status);
  }

  /** How long to wait so as to use at most half of the requests left this minute. */
  function pace(headers) {
    const remaining = Number(headers.get('x-ratelimit-remaining'));
    const reset = Number(headers.get('x-ratelimit-reset'));
    if (!Number.isFinite(remaining) || !Number.isFinite(reset)) return MIN_MS;
    if (remaining <= 2) return Math.max(MIN_MS, (reset + 1) * 1000);
    return Math.max(MIN_MS, Math.ceil((reset * 1000) / Math.floor(remaining / 2)));
  }

  let timer;
  let last = 0;
  const schedule = (ms) => {
    clearTimeout(timer);
    // A hidden tab asks nothing; it catches up when shown again, never sooner than 3 s apart.
    if (!document.hidden) timer = setTimeout(tick, Math.max(ms, MIN_MS - (Date.now() - last)));
  };

  async function tick() {
    last = Date.now();
    let delay = MIN_MS;
    try {
      const reply = await fetch(url, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
      if (reply.status === 401) return location.assign('/');
      if (reply.status === 429 || reply.status === 503) {
        delay = Math.max(MIN_MS, Number(reply.headers.get('retry-after') || 5) * 1000);
      } else if (reply.ok) {
        const body = await reply.json();
        const jobs = Array.isArray(body.jobs) ? body.jobs : [body];
        let ended = false;
        for (const job of jobs) ended = update(job) || ended;
        if (ended) return location.reload();
        if (!jobs.some((job) => OPEN.has(job.status))) return;
        delay = pace(reply.headers);
      } else {
        delay = 10_000;
      }
    } catch {
      delay = 10_000;
    }
    schedule(delay);
  }

  document.addEventListener('visibilitychange', () => schedule(0));
  schedule(MIN_MS);
})();
