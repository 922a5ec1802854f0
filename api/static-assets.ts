// The interactive reference's bundled assets (swagger-ui-dist), served from local files: no CDN.
// Only the files the page loads (and their source maps) are served; each is read once.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Request, Response } from './http.ts';

export const ASSETS_PREFIX = '/api/docs/assets/';
const FILES = ['swagger-ui.css', 'swagger-ui.css.map', 'swagger-ui-bundle.js', 'swagger-ui-bundle.js.map', 'favicon-16x16.png', 'favicon-32x32.png'];
const TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.png': 'image/png',
};

export interface Asset {
  body: Buffer;
  etag: string;
  type: string;
}

/** A file read once, with its strong ETag. */
export function readAsset(file: string, type: string): Asset {
  const body = fs.readFileSync(file);
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, type };
}

/** Answers with the asset (a HEAD without its body), or 304 when If-None-Match names its ETag. */
export function sendAsset(req: Request, res: Response, a: Asset, headers: Record<string, string>): void {
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader('ETag', a.etag);
  const inm = req.headers['if-none-match'];
  if (inm && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === a.etag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('Content-Type', a.type);
  res.setHeader('Content-Length', a.body.length);
  res.statusCode = 200;
  res.end(req.method === 'HEAD' ? undefined : a.body);
}

export function createAssetServer(): (req: Request, res: Response) => boolean {
  // Resolve the folder only: requiring the package would load its whole bundle.
  const dir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const loaded = new Map<string, Asset>();
  const load = (name: string): Asset => {
    let a = loaded.get(name);
    if (!a) {
      a = readAsset(path.join(dir, name), TYPES[path.extname(name)]);
      loaded.set(name, a);
    }
    return a;
  };

  /** Answers the request when it names one of the assets (GET or HEAD); false otherwise. */
  return function serveAsset(req, res) {
    if (!req.path.startsWith(ASSETS_PREFIX) || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
    const name = req.path.slice(ASSETS_PREFIX.length);
    if (!FILES.includes(name)) return false;
    sendAsset(req, res, load(name), { 'Cache-Control': 'public, max-age=3600' });
    return true;
  };
}
