// Service-User: an API key acting on behalf of one of its space's end-users. Every such request
// is recorded with who, on whose behalf, what and from where.
import type { Request } from '../http.ts';
import { problem } from '../../lib/problem.ts';
import type { AppDeps } from '../deps.ts';

export async function applyImpersonation(req: Request, deps: AppDeps): Promise<void> {
  const value = req.headers['service-user'];
  if (value === undefined || value === '') return;
  const p = req.ctx.principal;
  if (!p || p.kind !== 'api_key') throw problem('header_not_allowed', { param: 'Service-User', detail: 'Only API keys can act on behalf of an end-user.' });
  if (typeof value !== 'string' || !value.startsWith('eu_')) {
    throw problem('invalid_end_user_id', { param: 'Service-User', detail: 'Service-User must be an end-user id (eu_...).' });
  }
  const { rows } = await deps.database.pool.query(
    `WITH found AS (SELECT id FROM end_users WHERE id = $1 AND org_id = $2 AND space_id = $3),
          logged AS (
            INSERT INTO impersonation_log (request_id, org_id, api_key_id, end_user_id, method, path, ip, user_agent)
            SELECT $4, $2, $5, id, $6, $7, $8, $9 FROM found RETURNING end_user_id)
     SELECT end_user_id FROM logged`,
    [value, p.boundOrgId, p.boundSpaceId, req.ctx.requestId, p.apiKeyId, req.method, req.originalUrl.split('?')[0], req.ctx.ip, req.ctx.userAgent ?? null],
  );
  if (!rows[0]) throw problem('invalid_end_user', { param: 'Service-User', detail: "The end-user does not exist in this key's space." });
  req.ctx.endUserId = value;
}
