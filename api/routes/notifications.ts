// /api/notifications: the caller's own notifications in the space (cursor-paged), marked read one
// by one or all at once. Any member reads their own: no permission beyond being in the space.
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import { CursorQuery, cursorList, cursorPage } from '../lists.ts';
import { ok, route } from '../route.ts';
import * as notifications from '../services/notifications.ts';

const Notification = z.object({
  id: z.string(),
  object: z.literal('notification'),
  kind: z.string().describe('run_ended, schedule_disabled, connection_needs_reconnection'),
  title: z.string(),
  body: z.string(),
  subject: z.object({
    run_id: z.string().optional(),
    schedule_id: z.string().optional(),
    connection_id: z.string().optional(),
    package_id: z.string().optional(),
  }).strict(),
  spaceId: z.string(),
  created_at: z.string(),
  read_at: z.string().nullable(),
}).meta({ id: 'Notification' });

const NotificationList = z.object({ object: z.literal('list'), data: z.array(Notification), hasMore: z.boolean() });
const ReadAll = z.object({ object: z.literal('notification_read_all'), marked: z.number().int() });
const TAG = 'Notifications';

export const notificationRoutes = [
  route({
    method: 'get', path: '/api/notifications', summary: "List the caller's notifications (cursor-paged)", tag: TAG,
    permission: 'signed-in',
    query: CursorQuery.extend({ unread: z.enum(['true']).optional().describe('only notifications not yet read') }),
    responses: { 200: { description: 'A page of notifications', schema: NotificationList } },
    handler: async ({ ctx, query, req, deps }) => {
      const page = cursorPage(query);
      const rows = await notifications.listNotifications(spaceScopeOf(ctx, deps.database), page, { unread: query.unread === 'true' });
      const { body, headers } = cursorList(req, page, rows);
      return ok(body, headers);
    },
  }),
  route({
    method: 'post', path: '/api/notifications/{id}/read', summary: 'Mark one notification read', tag: TAG,
    permission: 'signed-in', params: z.object({ id: z.string() }),
    responses: { 200: { description: 'The notification', schema: Notification } },
    handler: async ({ ctx, params, deps }) => ok(await notifications.markNotificationRead(spaceScopeOf(ctx, deps.database), params.id)),
  }),
  route({
    method: 'post', path: '/api/notifications/read-all', summary: "Mark every one of the caller's notifications in the space read", tag: TAG,
    permission: 'signed-in',
    responses: { 200: { description: 'How many were marked', schema: ReadAll } },
    handler: async ({ ctx, deps }) => ok({ object: 'notification_read_all', marked: await notifications.markAllNotificationsRead(spaceScopeOf(ctx, deps.database)) }),
  }),
];
