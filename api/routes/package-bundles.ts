// .afps-bundle export of an agent with its dependencies, and bundle import (spec: Package
// version rules; AFPS_SIGNATURE_POLICY, AFPS_TRUST_ROOT, AFPS_SIGNING_KEY).
import { PACKAGE_WRITE } from '../../lib/permissions.ts';
import { z } from 'zod';
import { isMultipart, readMultipartFile } from '../../lib/multipart.ts';
import { problem } from '../../lib/problem.ts';
import { route, type Reply } from '../route.ts';
import { exportBundle, importBundle } from '../services/packages/bundles.ts';
import { ArchiveUpload, PackageParams, packageIdOf, scopeOf } from './package-wire.ts';

const BundleImport = z.object({
  packageId: z.string(),
  type: z.literal('agent'),
  version: z.string(),
  integrity: z.string().describe('the bundle\'s overall integrity'),
  signed: z.boolean(),
  trusted: z.boolean(),
  warnings: z.array(z.string()),
  packages: z.array(z.object({ packageId: z.string(), type: z.string(), version: z.string(), integrity: z.string(), status: z.enum(['created', 'added', 'unchanged']) })),
}).meta({ id: 'BundleImport' });

export const packageBundleRoutes = [
  route({
    method: 'get', path: '/api/agents/{scope}/{name}/bundle', summary: 'Export an agent and its resolved dependencies as an .afps-bundle', tag: 'Agents',
    permission: 'agents:read', rateLimit: { perMinute: 30 }, params: PackageParams,
    query: z.object({ version: z.string().optional().describe('exact version, dist-tag or range; default latest') }),
    responses: { 200: { description: 'The bundle (a ZIP)', contentType: 'application/zip' } },
    handler: async ({ ctx, params, query, deps }): Promise<Reply> => {
      const bundle = await exportBundle(scopeOf(ctx, deps), packageIdOf(params), query.version);
      return {
        status: 200,
        body: bundle.bytes,
        headers: {
          'Content-Type': 'application/zip',
          'Content-Disposition': `attachment; filename="${bundle.filename}"`,
          'X-Package-Version': bundle.version,
        },
      };
    },
  }),
  route({
    method: 'post', path: '/api/packages/import-bundle', summary: 'Import an .afps-bundle (multipart field file): every package version it holds', tag: 'Packages',
    location: (b) => `/api/packages/${b.packageId}`,
    authority: 'resource', permission: PACKAGE_WRITE, rateLimit: { perMinute: 10 }, rawBody: true, bodyContent: { 'multipart/form-data': ArchiveUpload },
    responses: {
      201: { description: 'Imported', schema: BundleImport },
      200: { description: 'Every version was already published with this content', schema: BundleImport },
      422: { description: 'bundle_signature_invalid or package_archive_unreadable' },
    },
    handler: async ({ ctx, req, deps }): Promise<Reply> => {
      if (!isMultipart(req)) throw problem('invalid_request', { param: 'Content-Type', detail: 'Send the bundle as multipart/form-data in the field "file".' });
      const upload = await readMultipartFile(req, { field: 'file', maxBytes: deps.config.API_BODY_LIMIT_BYTES });
      const outcome = await importBundle(scopeOf(ctx, deps), upload.file.bytes);
      return { status: outcome.status, body: outcome.body };
    },
  }),
];
