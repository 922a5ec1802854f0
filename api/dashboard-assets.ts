// The dashboard (web/, built into dist/web by bin/start.mjs): its page at / and its hashed assets
// under /assets/, from local files, under a strict Content-Security-Policy. Nothing else of the
// API changes: every other path goes on to the routes and the 404.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Request, Response } from './http.ts';

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

interface File {
  body: Buffer;
  etag: string;
  type: string;
}

function read(file: string): File {
  const body = fs.readFileSync(file);
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, type: TYPES[path.extname(file)] ?? 'application/octet-stream' };
}

function send(req: Request, res: Response, file: File, headers: Record<string, string>): void {
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader('ETag', file.etag);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  const inm = req.headers['if-none-match'];
  if (inm && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === file.etag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('Content-Type', file.type);
  res.setHeader('Content-Length', file.body.length);
  res.statusCode = 200;
  res.end(req.method === 'HEAD' ? undefined : file.body);
}

/** Answers GET or HEAD of / and of the built assets (true); anything else is left to the routes. */
export function createDashboardServer(dir = DEFAULT_DIR): (req: Request, res: Response) => boolean {
  let built: { page: File; assets: Map<string, File> } | null = null;
  // read once the build is there (a process started before its first build finds it later)
  const load = () => {
    if (built || !fs.existsSync(path.join(dir, 'index.html'))) return built;
    const assets = new Map<string, File>();
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
      send(req, res, b.page, {
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
    send(req, res, asset, { 'Cache-Control': 'public, max-age=31536000, immutable' });
    return true;
  };
}
