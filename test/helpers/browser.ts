// A real headless Chromium for the browser tests: Debian's `chromium` package (installed by
// .ci/env.sh when it is missing), driven by playwright-core. With no browser the tests fail
// and say how to get one; they never skip.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * This machine has no internet: without the background-networking flags Chromium keeps
 * trying to reach Google's services and floods the log with refused connections.
 */
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Chromium on a fresh profile (its own --user-data-dir), removed on close. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `The browser tests need Chromium at ${CHROMIUM_PATH} and there is none: run "apt-get install chromium" ` +
        '(npm test does it through .ci/env.sh when run as root), or set CHROMIUM_PATH to a Chromium or Chrome binary.',
    );
  }
  const profile = mkdtempSync(join(tmpdir(), 'tollgate-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: FLAGS,
    acceptDownloads: true,
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
