// Service-Version: request header, then the organization's pin, then the current version.
import type { Request, Response } from '../http.ts';
import { problem } from '../../lib/problem.ts';

export const CURRENT_API_VERSION = '2026-03-21';
export const SUPPORTED_API_VERSIONS = new Set([CURRENT_API_VERSION]);
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

export function isCalendarDate(s: string): boolean {
  const m = DATE.exec(s);
  if (!m) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(s);
}

export function resolveApiVersion(req: Request, res: Response): void {
  const header = req.headers['service-version'];
  let version: string;
  if (typeof header === 'string' && header !== '') {
    if (!isCalendarDate(header)) throw problem('invalid_api_version', { param: 'Service-Version', detail: 'Service-Version must be a date in the form YYYY-MM-DD.' });
    version = header;
  } else {
    version = req.ctx.org?.apiVersion ?? CURRENT_API_VERSION;
  }
  if (!SUPPORTED_API_VERSIONS.has(version)) {
    throw problem('unsupported_api_version', { param: 'Service-Version', detail: `API version ${version} is not served; served: ${[...SUPPORTED_API_VERSIONS].join(', ')}.` });
  }
  req.ctx.apiVersion = version;
  res.setHeader('Service-Version', version);
}

/**
 * The Service-Version of a refusal made before the version was resolved (permission, binding):
 * the requested version when it is one this service serves, else the organization's pin or the
 * current one. A refusal already carrying the header keeps it.
 */
export function versionOnRefusal(req: Request, res: Response): void {
  if (res.headersSent || res.hasHeader('Service-Version')) return;
  const header = req.headers['service-version'];
  const asked = typeof header === 'string' && SUPPORTED_API_VERSIONS.has(header) ? header : undefined;
  res.setHeader('Service-Version', asked ?? req.ctx.org?.apiVersion ?? CURRENT_API_VERSION);
}
