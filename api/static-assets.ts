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

interface Asset {
  body: Buffer;
  etag: string;
  type: string;
}

export function createAssetServer(): (req: Request, res: Response) => boolean {
  // Resolve the folder only: requiring the package would load its whole bundle.
  const dir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const loaded = new Map<string, Asset>();
  const load = (name: string): Asset => {
    let a = loaded.get(name);
    if (!a) {
      const body = fs.readFileSync(path.join(dir, name));
      a = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, type: TYPES[path.extname(name)] };
      loaded.set(name, a);
    }
    return a;
  };

  /** Answers the request when it names one of the assets (GET or HEAD); false otherwise. */
  return function serveAsset(req, res) {
    if (!req.path.startsWith(ASSETS_PREFIX) || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
    const name = req.path.slice(ASSETS_PREFIX.length);
    if (!FILES.includes(name)) return false;
    const a = load(name);
    res.setHeader('ETag', a.etag);
    res.setHeader('Cache-Control', 'public, max-age=3600');
    const inm = req.headers['if-none-match'];
    if (inm && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === a.etag)) {
      res.statusCode = 304;
      res.end();
      return true;
    }
    res.setHeader('Content-Type', a.type);
    res.setHeader('Content-Length', a.body.length);
    res.statusCode = 200;
    res.end(a.body);
    return true;
  };
}
