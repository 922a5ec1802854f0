// The dashboard (web/, built into dist/web by bin/start.mjs): its page at / and its hashed assets
// under /assets/, from local files, under a strict Content-Security-Policy. Nothing else of the
// API changes: every other path goes on to the routes and the 404.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Request, Response } from './http.ts';
import { readAsset, sendAsset, type Asset } from './static-assets.ts';

/** dist/web beside this file's folder: api/ under tsx, dist/ in the bundle; both sit in the root */
const DEFAULT_DIR = fileURLToPath(new URL('../dist/web/', import.meta.url));
const ASSETS = '/assets/';

/**
 * No inline script or style anywhere, no third party: the page loads its own script and
 * stylesheet and talks to its own origin only. No framing, no <base>, forms post to this origin.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "font-src 'self'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.html': 'text/html; charset=utf-8' };

const read = (file: string): Asset => readAsset(file, TYPES[path.extname(file)] ?? 'application/octet-stream');

/** Answers GET or HEAD of / and of the built assets (true); anything else is left to the routes. */
export function createDashboardServer(dir = DEFAULT_DIR): (req: Request, res: Response) => boolean {
  let built: { page: Asset; assets: Map<string, Asset> } | null = null;
  // read once the build is there (a process started before its first build finds it later)
  const load = () => {
    if (built || !fs.existsSync(path.join(dir, 'index.html'))) return built;
    const assets = new Map<string, Asset>();
    const assetDir = path.join(dir, 'assets');
    for (const name of fs.existsSync(assetDir) ? fs.readdirSync(assetDir) : []) assets.set(name, read(path.join(assetDir, name)));
    built = { page: read(path.join(dir, 'index.html')), assets };
    return built;
  };

  return function serveDashboard(req, res) {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    if (req.path !== '/' && !req.path.startsWith(ASSETS)) return false;
    const b = load();
    if (!b) return false;
    if (req.path === '/') {
      sendAsset(req, res, b.page, {
        'X-Content-Type-Options': 'nosniff',
        'Content-Security-Policy': DASHBOARD_CSP,
        'Cache-Control': 'no-cache',
        'Referrer-Policy': 'same-origin',
        'X-Frame-Options': 'DENY',
        'Cross-Origin-Opener-Policy': 'same-origin',
      });
      return true;
    }
    const asset = b.assets.get(req.path.slice(ASSETS.length));
    if (!asset) return false;
    // the name carries the content's hash: a new build is a new name
    sendAsset(req, res, asset, { 'Cache-Control': 'public, max-age=31536000, immutable', 'X-Content-Type-Options': 'nosniff' });
    return true;
  };
}
