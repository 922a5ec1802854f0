// End-users (spec: End-users and webhooks). Space-scoped; cursor-paged; POST honors Idempotency-Key.
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import { CursorQuery, cursorList, cursorPage } from '../lists.ts';
import { created, noContent, ok, route } from '../route.ts';
import * as endUsers from '../services/end-users.ts';

const EndUser = z.object({
  id: z.string(),
  object: z.literal('end_user'),
  externalId: z.string(),
  name: z.string(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  spaceId: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'EndUser' });

const EndUserList = z.object({ object: z.literal('list'), data: z.array(EndUser), hasMore: z.boolean() });
const IdParams = z.object({ id: z.string() });
const WRITE_LIMIT = { perMinute: 60 };
const READ_LIMIT = { perMinute: 300 };
const Metadata = z.record(z.string(), z.unknown());

export const endUserRoutes = [
  route({
    method: 'post', path: '/api/end-users', summary: 'Create an end-user', tag: 'End-users',
    location: (b) => `/api/end-users/${b.id}`,
    permission: 'end-users:write', rateLimit: WRITE_LIMIT, idempotent: true,
    body: z.object({ externalId: z.string().min(1).max(255), name: z.string().min(1).max(255), metadata: Metadata.optional() }).strict(),
    responses: { 201: { description: 'Created', schema: EndUser } },
    handler: async ({ ctx, body, deps }) => created(await endUsers.createEndUser(spaceScopeOf(ctx, deps.database), body)),
  }),
  route({
    method: 'get', path: '/api/end-users', summary: 'List end-users (cursor-paged)', tag: 'End-users',
    permission: 'end-users:read', rateLimit: READ_LIMIT,
    query: CursorQuery.extend({ externalId: z.string().optional() }),
    responses: { 200: { description: 'A page of end-users', schema: EndUserList } },
    handler: async ({ ctx, query, req, deps }) => {
      const page = cursorPage(query);
      const rows = await endUsers.listEndUsers(spaceScopeOf(ctx, deps.database), page, { externalId: query.externalId });
      const { body, headers } = cursorList(req, page, rows);
      return ok(body, headers);
    },
  }),
  route({
    method: 'get', path: '/api/end-users/{id}', summary: 'Read an end-user', tag: 'End-users',
    permission: 'end-users:read', rateLimit: READ_LIMIT, params: IdParams,
    responses: { 200: { description: 'The end-user', schema: EndUser } },
    handler: async ({ ctx, params, deps }) => ok(await endUsers.getEndUser(spaceScopeOf(ctx, deps.database), params.id)),
  }),
  route({
    method: 'patch', path: '/api/end-users/{id}', summary: 'Update an end-user', tag: 'End-users',
    permission: 'end-users:write', rateLimit: WRITE_LIMIT, params: IdParams,
    body: z.object({ externalId: z.string().min(1).max(255).optional(), name: z.string().min(1).max(255).optional(), metadata: Metadata.nullable().optional() }).strict(),
    responses: { 200: { description: 'The updated end-user', schema: EndUser } },
    handler: async ({ ctx, params, body, deps }) => ok(await endUsers.updateEndUser(spaceScopeOf(ctx, deps.database), params.id, body)),
  }),
  route({
    method: 'delete', path: '/api/end-users/{id}', summary: 'Delete an end-user', tag: 'End-users',
    permission: 'end-users:delete', rateLimit: WRITE_LIMIT, params: IdParams,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ ctx, params, deps }) => {
      await endUsers.deleteEndUser(spaceScopeOf(ctx, deps.database), params.id);
      return noContent();
    },
  }),
];
