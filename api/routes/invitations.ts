// Invitations: issued by members holding members:write; the token is returned once at creation,
// e-mailed when mail is enabled (delivery says what happened), and accepted by the invited person
// while signed in.
import { z } from 'zod';
import { refuseUnsupportedIdempotencyKey } from '../middleware/idempotency.ts';
import { mailerFor } from '../../lib/mail.ts';
import { ProblemSchema } from '../openapi.ts';
import { created, noContent, ok, route } from '../route.ts';
import * as invitations from '../services/invitations.ts';
import { reachOrg } from '../services/org-access.ts';
import { requireSignedInSession } from '../services/sessions.ts';
import { OrgRoleSchema } from './orgs.ts';

const Invitation = z.object({
  id: z.string(),
  email: z.string(),
  role: z.string(),
  status: z.enum(['pending', 'accepted', 'cancelled', 'expired']),
  delivery: z.enum(['sending', 'sent', 'failed', 'disabled']).meta({
    description: 'The invitation e-mail: sent; failed (the invitation stays pending); sending; or disabled when the platform has no SMTP_URL (pass the link on yourself)',
  }),
  invited_by: z.string().nullable(),
  expiresAt: z.string(),
  createdAt: z.string(),
}).meta({ id: 'Invitation' });
const OrgParams = z.object({ orgId: z.string() });
const TAG = 'Organizations';

export const invitationRoutes = [
  route({
    method: 'post', path: '/api/orgs/{orgId}/invitations', summary: 'Invite someone by email; the link is e-mailed when mail is enabled, and the token is returned once', tag: TAG,
    location: (b, p) => `/api/orgs/${p.orgId}/invitations/${b.id}`,
    tenant: 'none', permission: 'members:write', params: OrgParams,
    body: z.object({ email: z.email().max(320), role: OrgRoleSchema }).strict(),
    responses: {
      201: {
        description: 'Invitation created and, with mail enabled, e-mailed (delivery: sent); with delivery disabled, pass accept_url on yourself',
        schema: Invitation.extend({ token: z.string(), accept_url: z.string() }),
      },
      500: { description: 'invitation_failed: the e-mail could not be sent; the invitation is kept with delivery failed', schema: ProblemSchema, contentType: 'application/problem+json' },
    },
    handler: async ({ ctx, req, deps, params, body }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'members:write', write: true });
      const mailer = mailerFor(deps.config, deps.log);
      const invitation = await invitations.inviteByEmail(access.scope, access.role, body, mailer, deps.log);
      return created({ ...invitation, accept_url: `${mailer.baseUrl}${invitations.acceptPath(invitation.token)}` });
    },
  }),
  route({
    method: 'get', path: '/api/orgs/{orgId}/invitations', summary: 'Invitations of an organization', tag: TAG,
    tenant: 'none', permission: 'members:read', params: OrgParams,
    responses: { 200: { description: 'Invitations, newest first', schema: z.object({ object: z.literal('list'), data: z.array(Invitation), hasMore: z.boolean() }) } },
    handler: async ({ ctx, req, deps, params }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'members:read' });
      return ok({ object: 'list', data: await invitations.listInvitations(access.scope), hasMore: false });
    },
  }),
  route({
    method: 'delete', path: '/api/orgs/{orgId}/invitations/{invitationId}', summary: 'Cancel a pending invitation', tag: TAG,
    tenant: 'none', permission: 'members:write', params: z.object({ orgId: z.string(), invitationId: z.string() }),
    responses: { 204: { description: 'Cancelled' } },
    handler: async ({ ctx, req, deps, params }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'members:write', write: true });
      await invitations.cancelInvitation(access.scope, params.invitationId);
      return noContent();
    },
  }),
  route({
    method: 'post', path: '/api/invitations/{token}/accept', summary: 'Accept an invitation as the signed-in user', tag: TAG,
    // Outside the authentication chain: without a session the answer is 401 authentication_required.
    stage: 'auth', tenant: 'none', params: z.object({ token: z.string() }),
    responses: {
      200: { description: 'Joined', schema: z.object({ orgId: z.string(), role: z.string(), personal_space_id: z.string() }) },
      401: { description: 'authentication_required', schema: ProblemSchema, contentType: 'application/problem+json' },
      410: { description: 'invitation_expired, invitation_cancelled or invitation_accepted', schema: ProblemSchema, contentType: 'application/problem+json' },
    },
    handler: async ({ req, deps, params }) => {
      // Outside /api/auth/*, an Idempotency-Key is refused as on any other operation that does not declare it.
      refuseUnsupportedIdempotencyKey(req);
      const session = await requireSignedInSession(req, deps, 'authentication_required');
      const joined = await invitations.acceptInvitation({ pool: deps.database.pool, authCache: deps.authCache }, session, params.token);
      return ok({ orgId: joined.orgId, role: joined.role, personal_space_id: joined.personalSpaceId });
    },
  }),
];
