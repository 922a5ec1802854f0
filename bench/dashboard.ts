// The dashboard's weight and first-page speed. Prints one JSON object:
//  - bundle: the built files (dist/web) raw, gzip and brotli, and the total a first visit loads;
//  - first page interactive from a cold cache (a fresh browser context per visit, Debian's Chromium
//    headless): the sign-in page (signed out) and the runs page (signed in, with its runs listed),
//    from navigation start to the dashboard's `dashboard-interactive` mark and to its content;
//  - baseline, in the same run: the floor of a first visit on this machine at this moment, a plain
//    text page of the same process (/llms.txt) from navigation start to its text shown.
// Target: first page interactive under 1,000 ms (median). The platform is the real process
// (`node bin/start.mjs platform`, NODE_ENV=production). Database: as bench/support.ts says.
//   node --import tsx bench/dashboard.ts
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../test/support/browser.ts';
import { emit, ensureBundle, freshBenchDatabase, loadAverage, median, note, ROOT, round, startPlatformChild } from './support.ts';

const VISITS = Number(process.env.BENCH_VISITS ?? 7);
const TARGET_MS = 1000;

function bundleFigures() {
  const dir = path.join(ROOT, 'dist/web');
  const files = [path.join(dir, 'index.html'), ...fs.readdirSync(path.join(dir, 'assets')).map((f) => path.join(dir, 'assets', f))];
  const each = files.map((f) => {
    const body = fs.readFileSync(f);
    return { file: path.relative(dir, f), bytes: body.length, gzip: zlib.gzipSync(body, { level: 9 }).length, brotli: zlib.brotliCompressSync(body).length };
  });
  const sum = (k: 'bytes' | 'gzip' | 'brotli') => each.reduce((n, f) => n + f[k], 0);
  return { files: each, total: { bytes: sum('bytes'), gzip: sum('gzip'), brotli: sum('brotli') } };
}

/** ms from navigation start until `ready` (a selector) is shown, in a fresh context. */
async function visit(browser: Browser, url: string, ready: string, cookie?: { name: string; value: string }) {
  const context = await browser.newContext();
  try {
    if (cookie) await context.addCookies([{ ...cookie, url }]);
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'commit' });
    // a locator, not a page function: the dashboard's CSP forbids evaluating strings in the page
    await page.locator(ready).first().waitFor({ timeout: 60_000 });
    return (await page.evaluate(`({
      interactive: performance.getEntriesByName('dashboard-interactive')[0]?.startTime ?? null,
      shown: performance.now(),
      requests: performance.getEntriesByType('resource').length + 1,
    })`)) as { interactive: number | null; shown: number; requests: number };
  } finally {
    await context.close();
  }
}

async function main(): Promise<void> {
  await ensureBundle();
  const bundle = bundleFigures();
  const db = await freshBenchDatabase();
  const token = 'bench-bootstrap-token-0123456789';
  const platform = await startPlatformChild({ env: { DATABASE_URL: db.url, SANDBOX_WARM_POOL: '0', BOOTSTRAP_TOKEN: token } });
  const browser = await launchChromium();
  try {
    const redeem = await fetch(`${platform.url}/api/auth/bootstrap/redeem`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, email: 'bench@example.test', password: 'a long enough passphrase', name: 'Bench' }),
    });
    if (redeem.status !== 201) throw new Error(`bootstrap: ${redeem.status} ${await redeem.text()}`);
    const [name, value] = redeem.headers.getSetCookie()[0].split(';')[0].split('=');
    const page = `${platform.url}/`;
    const signIn = [];
    const runs = [];
    const floor = [];
    // one warm-up of each, so the server's first answers (reading files, caches) are not counted
    await visit(browser, page, '#email');
    await visit(browser, `${platform.url}/llms.txt`, 'body');
    for (let i = 0; i < VISITS; i++) {
      signIn.push(await visit(browser, page, '#email'));
      runs.push(await visit(browser, page, 'text=No runs here yet.', { name, value }));
      floor.push(await visit(browser, `${platform.url}/llms.txt`, 'body'));
      note(`visit ${i + 1}: sign-in ${round(signIn[i].interactive ?? NaN)} ms, runs ${round(runs[i].shown)} ms, plain page ${round(floor[i].shown)} ms`);
    }
    const figures = (xs: { interactive: number | null; shown: number; requests: number }[]) => ({
      interactive_ms_median: xs[0].interactive === null ? null : round(median(xs.map((x) => x.interactive ?? NaN))),
      content_shown_ms_median: round(median(xs.map((x) => x.shown))),
      content_shown_ms_max: round(Math.max(...xs.map((x) => x.shown))),
      requests: xs[0].requests,
    });
    const runsPage = figures(runs);
    emit({
      benchmark: 'dashboard',
      visits: VISITS,
      bundle,
      sign_in_page: figures(signIn),
      runs_page_signed_in: runsPage,
      baseline_plain_page: { ...figures(floor), interactive_ms_median: undefined },
      target: { first_page_interactive_ms: TARGET_MS, met: (runsPage.interactive_ms_median ?? Infinity) < TARGET_MS && figures(signIn).interactive_ms_median! < TARGET_MS },
      load_average: loadAverage(),
    });
  } finally {
    await browser.close().catch(() => undefined);
    await platform.dispose();
    await db.drop();
  }
}

await main();
