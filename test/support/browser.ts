// Debian's Chromium through playwright-core, headless, for the dashboard's browser tests and its
// bench: one browser per file, a fresh profile, no network but loopback. Accessibility checks run
// axe-core inside the page (through the DevTools protocol, so the page's CSP stays enforced).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A headless Chromium; playwright gives every launch a fresh temporary profile (--user-data-dir). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(AXE);
  const result = (await page.evaluate('window.axe.run(document, { resultTypes: ["violations"] })')) as { violations: AxeViolation[] };
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

export async function assertAccessible(page: Page, what: string): Promise<void> {
  const found = await seriousViolations(page);
  assert.deepEqual(found.map((v) => `${v.id} (${v.impact}): ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`), [], `axe on ${what}`);
}

/** Screenshots of one run, in a folder of the test data directory (printed once). */
export function screenshotFolder(name: string): (page: Page, label: string) => Promise<void> {
  const dir = path.resolve('.test-data', 'screenshots', name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  process.stdout.write(`screenshots: ${dir}\n`);
  let n = 0;
  return async (page, label) => {
    n += 1;
    await page.screenshot({ path: path.join(dir, `${String(n).padStart(2, '0')}-${label}.png`), fullPage: true });
  };
}

/** Fails on what the page reports broken: CSP refusals and uncaught errors. */
export function watchPageErrors(page: Page): string[] {
  const seen: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) seen.push(m.text());
  });
  page.on('pageerror', (e) => seen.push(`uncaught: ${e.message}`));
  return seen;
}
