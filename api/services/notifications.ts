// Notifications: what a person is told in a space (their runs' endings, schedules disabled,
// connections needing reconnection). Run endings are written by the database in the transaction
// that ends the run (db/functions.sql, runs_status_outbox); other features call notify().
import type pg from 'pg';
import type { SpaceScope } from '../../db/tenant.ts';
import { problem } from '../../lib/problem.ts';
import { cursorCondition, type CursorPage } from '../lists.ts';

export type NotificationKind = 'run_ended' | 'schedule_disabled' | 'connection_needs_reconnection' | 'approval_requested';

/** Ids of what a notification is about. */
export interface NotificationSubject {
  run_id?: string;
  schedule_id?: string;
  connection_id?: string;
  package_id?: string;
  approval_id?: string;
}

export interface Notification {
  id: string;
  object: 'notification';
  kind: string;
  title: string;
  body: string;
  subject: NotificationSubject;
  spaceId: string;
  created_at: string;
  read_at: string | null;
}

export interface NotifyInput {
  orgId: string;
  spaceId: string;
  /** the person told */
  userId: string;
  kind: NotificationKind;
  title: string;
  body: string;
  subject: NotificationSubject;
}

const WIRE = `json_build_object('id', id, 'object', 'notification', 'kind', kind, 'title', title, 'body', body, 'subject', subject,
  'spaceId', space_id, 'created_at', wire_time(created_at), 'read_at', wire_time(read_at))`;

/** Tells one person something; returns the notification. Pass a transaction's client to tie it to a change. */
export async function notify(db: Pick<pg.Pool, 'query'>, input: NotifyInput): Promise<Notification> {
  const { rows } = await db.query<{ n: Notification }>(
    `INSERT INTO notifications (id, org_id, space_id, user_id, kind, title, body, subject)
     VALUES (sorted_id('ntf'), $1, $2, $3, $4, $5, $6, $7) RETURNING ${WIRE} AS n`,
    [input.orgId, input.spaceId, input.userId, input.kind, input.title, input.body, JSON.stringify(input.subject)],
  );
  return rows[0].n;
}

/** The caller's own notifications in this space; an end-user has none. */
export async function listNotifications(scope: SpaceScope, page: CursorPage, filter: { unread?: boolean } = {}): Promise<Notification[]> {
  if (scope.actor.endUserId) return [];
  const params: unknown[] = [scope.orgId, scope.spaceId, scope.actor.userId, page.limit + 1];
  let where = 'org_id = $1 AND space_id = $2 AND user_id = $3';
  if (filter.unread) where += ' AND read_at IS NULL';
  const { condition, order } = cursorCondition(page, params);
  where += condition;
  const { rows } = await scope.pool.query<{ n: Notification }>(
    `SELECT ${WIRE} AS n FROM notifications WHERE ${where} ORDER BY id COLLATE "C" ${order} LIMIT $4`,
    params,
  );
  return rows.map((r) => r.n);
}

export async function markNotificationRead(scope: SpaceScope, id: string): Promise<Notification> {
  const { rows } = scope.actor.endUserId ? { rows: [] } : await scope.pool.query<{ n: Notification }>(
    `UPDATE notifications SET read_at = COALESCE(read_at, now())
      WHERE id = $1 AND org_id = $2 AND space_id = $3 AND user_id = $4 RETURNING ${WIRE} AS n`,
    [id, scope.orgId, scope.spaceId, scope.actor.userId],
  );
  if (!rows[0]) throw problem('not_found', { detail: 'No such notification.' });
  return rows[0].n;
}

export async function markAllNotificationsRead(scope: SpaceScope): Promise<number> {
  if (scope.actor.endUserId) return 0;
  const { rowCount } = await scope.pool.query(
    'UPDATE notifications SET read_at = now() WHERE org_id = $1 AND space_id = $2 AND user_id = $3 AND read_at IS NULL',
    [scope.orgId, scope.spaceId, scope.actor.userId],
  );
  return rowCount ?? 0;
}
