// Removing an organization or a space removes every row that belongs to it, including rows of
// tables added later by other features that carry org_id / space_id without a cascading foreign
// key. Tables are found in the catalog; an order that satisfies foreign keys is found by retrying.
import type pg from 'pg';

/** Tables whose rows outlive the tenant on purpose (the bootstrap record must stay redeemed). */
const KEPT = ['bootstrap_state'];

export async function sweepTenantRows(client: pg.PoolClient, column: 'org_id' | 'space_id', value: string): Promise<void> {
  const { rows } = await client.query(
    `SELECT c.table_name FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = current_schema() AND c.column_name = $1 AND t.table_type = 'BASE TABLE'
        AND NOT (c.table_name = ANY($2::text[]))
      ORDER BY c.table_name`,
    [column, KEPT],
  );
  let pending: string[] = rows.map((r) => r.table_name as string);
  while (pending.length) {
    const blocked: string[] = [];
    for (const table of pending) {
      await client.query('SAVEPOINT sweep');
      try {
        await client.query(`DELETE FROM "${table.replace(/"/g, '""')}" WHERE "${column}" = $1`, [value]);
        await client.query('RELEASE SAVEPOINT sweep');
      } catch (err) {
        await client.query('ROLLBACK TO SAVEPOINT sweep');
        // A row another table still references: try again after the others are gone.
        if ((err as { code?: string }).code !== '23503') throw err;
        blocked.push(table);
      }
    }
    if (blocked.length === pending.length) throw new Error(`cannot remove ${column}=${value}: rows of ${blocked.join(', ')} are still referenced`);
    pending = blocked;
  }
}

/** True when the table exists with the column (features that may not be installed yet). */
export async function tableHasColumn(db: pg.Pool | pg.PoolClient, table: string, column: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2',
    [table, column],
  );
  return Boolean(rowCount);
}
