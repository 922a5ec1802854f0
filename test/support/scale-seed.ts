// Many runs and end-users written straight by SQL (generate_series), for the query-plan test and
// bench/scale.ts: a space's runs spread over four agents, three statuses, the owner, a member and
// the space's end-users, each with replay records and a log line.
import type pg from 'pg';
import { aMember, aSpace, anOrg } from './builders.ts';

export interface SeededSpace {
  orgId: string;
  spaceId: string;
  ownerId: string;
  /** a member whose runs are 20% of the space's */
  memberId: string;
}

/** The agent packages runs are spread over (packages rows, so the agent routes find them). */
export const SEED_AGENTS = ['@seed/agent-0', '@seed/agent-1', '@seed/agent-2', '@seed/agent-3'];

/** `orgs` organizations with `spacesPerOrg` team spaces each, every space holding the seed agents. */
export async function seedSpaces(pool: pg.Pool, orgs: number, spacesPerOrg: number): Promise<SeededSpace[]> {
  const out: SeededSpace[] = [];
  for (let o = 0; o < orgs; o++) {
    const org = await anOrg(pool);
    const memberId = await aMember(pool, org.orgId, 'member');
    for (let s = 0; s < spacesPerOrg; s++) {
      const spaceId = s === 0 ? org.spaceId : await aSpace(pool, org.orgId, { name: `Space ${s}` });
      if (s === 0) {
        await pool.query(
          `INSERT INTO packages (org_id, id, type, home_space_id, created_by, draft_integrity) SELECT $1, a, 'agent', $2, $3, 'seed' FROM unnest($4::text[]) a`,
          [org.orgId, spaceId, org.ownerId, SEED_AGENTS],
        );
      } else {
        await pool.query(
          'INSERT INTO package_placements (org_id, package_id, space_id, created_by) SELECT $1, a, $2, $3 FROM unnest($4::text[]) a',
          [org.orgId, spaceId, org.ownerId, SEED_AGENTS],
        );
      }
      out.push({ orgId: org.orgId, spaceId, ownerId: org.ownerId, memberId });
    }
  }
  return out;
}

const CHUNK = 50_000;

/**
 * End-users numbered `start`..`n` in the space (1.. at first; a later call grows the space);
 * ids sort (byte order) in creation order, as real ones do.
 */
export async function seedEndUsers(pool: pg.Pool, space: SeededSpace, n: number, start = 1): Promise<void> {
  for (let from = start; from <= n; from += CHUNK) {
    await pool.query(
      `INSERT INTO end_users (id, org_id, space_id, external_id, name, created_at, updated_at)
       SELECT 'eu_' || lpad(to_hex(g), 8, '0') || substr(md5($2 || g), 1, 14), $1, $2, 'ext-' || g, 'User ' || g,
              now() - (($4::int - g) * interval '10 milliseconds'), now()
         FROM generate_series($3::int, least($3::int + ${CHUNK} - 1, $4::int)) g`,
      [space.orgId, space.spaceId, from, n],
    );
  }
}

/**
 * Runs numbered `opts.start` (default 1)..`n` in the space, newest last; every tenth is an
 * end-user's (when the space has any), two in ten the member's, the rest the owner's; one in a
 * thousand still running, one in ten failed. `eventIds` replay records and one log line per run.
 */
export async function seedRuns(pool: pg.Pool, space: SeededSpace, n: number, opts: { eventIds?: number; start?: number } = {}): Promise<void> {
  const { rows } = await pool.query<{ ids: string[] | null }>(
    `SELECT array_agg(id) AS ids FROM (SELECT id FROM end_users WHERE org_id = $1 AND space_id = $2 LIMIT 1000) e`,
    [space.orgId, space.spaceId],
  );
  const endUsers = rows[0].ids ?? [];
  for (let from = opts.start ?? 1; from <= n; from += CHUNK) {
    const to = Math.min(from + CHUNK - 1, n);
    await pool.query(
      `WITH g AS (
         SELECT g, now() - (($4::int - g) * interval '100 milliseconds') - interval '1 hour' AS at,
                CASE WHEN g % 1000 = 0 THEN 'running' WHEN g % 10 = 1 THEN 'failed' ELSE 'success' END AS status,
                CASE WHEN g % 10 = 2 AND cardinality($7::text[]) > 0 THEN $7[1 + g % cardinality($7::text[])] END AS end_user
           FROM generate_series($3::int, $8::int) g)
       INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, input, output, error, trigger_kind,
                         actor_user_id, end_user_id, kind, timeout_seconds, event_secret, sink_expires_at, submitted_at,
                         created_at, started_at, finished_at)
       SELECT 'run_' || substr(md5($2 || g), 1, 22), $1, $2, '@seed/agent-' || (g % 4), '1.0.0', status,
              jsonb_build_object('q', 'question ' || g),
              CASE WHEN status = 'success' THEN jsonb_build_object('a', g) END,
              CASE WHEN status = 'failed' THEN '{"code":"agent_failed","message":"failed"}'::jsonb END,
              CASE WHEN end_user IS NOT NULL THEN 'end_user' ELSE 'member' END,
              CASE WHEN end_user IS NOT NULL THEN $5 WHEN g % 10 IN (3, 4) THEN $6 ELSE $5 END,
              end_user, 'agent', 300, 'sealed', at + interval '40 minutes', at,
              at, at + interval '1 second', CASE WHEN status <> 'running' THEN at + interval '5 seconds' END
         FROM g`,
      [space.orgId, space.spaceId, from, n, space.ownerId, space.memberId, endUsers, to],
    );
    await pool.query(
      `INSERT INTO run_logs (run_id, sequence, level, message, created_at)
       SELECT 'run_' || substr(md5($1 || g), 1, 22), 1, 'info', 'step ' || g, now() - (($3::int - g) * interval '100 milliseconds')
         FROM generate_series($2::int, $4::int) g`,
      [space.spaceId, from, n, to],
    );
    if (opts.eventIds) {
      await pool.query(
        `INSERT INTO run_event_ids (run_id, message_id, created_at)
         SELECT 'run_' || substr(md5($1 || g), 1, 22), 'msg_' || k, now() - (($3::int - g) * interval '100 milliseconds') - interval '1 hour'
           FROM generate_series($2::int, $4::int) g, generate_series(1, $5::int) k`,
        [space.spaceId, from, n, to, opts.eventIds],
      );
    }
  }
}
