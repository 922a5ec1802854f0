// Who a schedule runs as: the person who created it, with what they hold in the space now (not
// what the credential they created it with held). They must hold agents:run there.
import type pg from 'pg';
import { isPermission, type OrgRole, type Permission } from '../../../lib/permissions.ts';
import { createLogger } from '../../../lib/log.ts';
import { spaceLevelPermissions } from '../space-access.ts';

// Disabling happens inside other families' transactions, which carry no logger of their own.
const log = createLogger('info', 'schedules');

interface MembershipRow {
  org_role: OrgRole | null;
  kind: string | null;
  owner_user_id: string | null;
  role_key: string | null;
  custom: string[] | null;
}

const MEMBERSHIP_JOINS = `
  LEFT JOIN org_members om ON om.org_id = s.org_id AND om.user_id = s.created_by
  LEFT JOIN spaces sp ON sp.org_id = s.org_id AND sp.id = s.space_id
  LEFT JOIN space_members sm ON sm.space_id = s.space_id AND sm.user_id = s.created_by
  LEFT JOIN space_roles sr ON sr.org_id = s.org_id AND sr.key = sm.role_key`;
const MEMBERSHIP_COLUMNS = 'om.role AS org_role, sp.kind, sp.owner_user_id, sm.role_key, sr.permissions AS custom';

function heldPermissions(r: MembershipRow | undefined, userId: string): Set<Permission> {
  if (!r || !r.org_role || !r.kind) return new Set();
  const perms = spaceLevelPermissions(r.org_role, { kind: r.kind, owner_user_id: r.owner_user_id }, userId, r.role_key, r.custom);
  return new Set((perms ?? []).filter(isPermission));
}

/** The permissions the person holds in the space today (empty when they left it or the organization). */
export async function creatorPermissions(pool: pg.Pool | pg.PoolClient, orgId: string, spaceId: string, userId: string): Promise<Set<Permission>> {
  const { rows } = await pool.query<MembershipRow>(
    `SELECT ${MEMBERSHIP_COLUMNS} FROM (SELECT $1::uuid AS org_id, $2::text AS space_id, $3::text AS created_by) s ${MEMBERSHIP_JOINS}`,
    [orgId, spaceId, userId],
  );
  return heldPermissions(rows[0], userId);
}

export const AGENT_DELETED_REASON = 'The agent was deleted.';
export const AGENT_UNPLACED_REASON = 'The agent was removed from this space.';
export const ACTOR_LOST_REASON = "The schedule's creator no longer has access to run agents in this space.";

/**
 * Disables, in the caller's transaction, every enabled schedule of the organization whose creator
 * can no longer launch in its space. Called after each membership or role change commits its rows.
 */
export async function disableSchedulesOfLostCreators(client: pg.PoolClient, orgId: string): Promise<string[]> {
  // one read: every enabled schedule of the organization with its creator's standing in its space
  const { rows } = await client.query<MembershipRow & { id: string; created_by: string }>(
    `SELECT s.id, s.created_by, ${MEMBERSHIP_COLUMNS} FROM schedules s ${MEMBERSHIP_JOINS} WHERE s.org_id = $1 AND s.enabled`,
    [orgId],
  );
  const lost = rows.filter((r) => !heldPermissions(r, r.created_by).has('agents:run')).map((r) => r.id);
  if (lost.length) await disableSchedules(client, orgId, lost, ACTOR_LOST_REASON);
  return lost;
}

/** Disables the given schedules with a readable reason; their pending fires see it and stop. */
export async function disableSchedules(client: pg.Pool | pg.PoolClient, orgId: string, ids: string[], reason: string): Promise<void> {
  if (!ids.length) return;
  // each creator hears of it in their notifications, in the same transaction as the change
  await client.query(
    `WITH disabled AS (
       UPDATE schedules SET enabled = false, disabled_reason = $3, version = version + 1, generation = generation + 1, updated_at = now()
        WHERE org_id = $1 AND id = ANY($2::text[]) AND enabled
       RETURNING id, org_id, space_id, created_by, name, agent_id)
     INSERT INTO notifications (id, org_id, space_id, user_id, kind, title, body, subject)
     SELECT sorted_id('ntf'), d.org_id, d.space_id, d.created_by, 'schedule_disabled',
            'Schedule ' || d.name || ' was disabled',
            'Schedule ' || d.name || ' of ' || d.agent_id || ' was disabled: ' || $3,
            jsonb_build_object('schedule_id', d.id, 'package_id', d.agent_id)
       FROM disabled d`,
    [orgId, ids, reason],
  );
  for (const id of ids) log.warn('schedule disabled', { schedule_id: id, reason });
}

/** Disables the schedules of an agent deleted from the organization, or removed from one space. */
export async function disableSchedulesOfAgent(client: pg.Pool | pg.PoolClient, orgId: string, agentId: string, spaceId: string | null, reason: string): Promise<void> {
  const { rows } = await client.query<{ id: string }>(
    `SELECT id FROM schedules WHERE org_id = $1 AND agent_id = $2 AND ($3::text IS NULL OR space_id = $3) AND enabled`,
    [orgId, agentId, spaceId],
  );
  await disableSchedules(client, orgId, rows.map((r) => r.id), reason);
}

/**
 * Disables the schedules whose runs used a connection that is being deleted: a scheduled run
 * resolves its creator's connections, and this one will be gone.
 */
export async function disableSchedulesUsingConnection(client: pg.Pool | pg.PoolClient, orgId: string, connectionId: string, reason: string): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `SELECT s.id FROM schedules s
      WHERE s.org_id = $1 AND s.enabled
        AND EXISTS (SELECT 1 FROM runs r JOIN run_connections rc ON rc.run_id = r.id
                     WHERE r.org_id = $1 AND r.schedule_id = s.id AND rc.connection_id = $2::uuid)`,
    [orgId, connectionId],
  );
  const ids = rows.map((r) => r.id);
  await disableSchedules(client, orgId, ids, reason);
  return ids;
}
