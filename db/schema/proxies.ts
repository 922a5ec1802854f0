// Outbound HTTP proxies of an organization (organization-level): where its model traffic leaves
// from when one is its default. The proxy's user name and password are sealed at rest (lib/crypto.ts).
import { sql } from 'drizzle-orm';
import { boolean, index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations } from './identity.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const proxies = pgTable('proxies', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  /** http://host:port of an HTTP CONNECT proxy, without credentials */
  url: text('url').notNull(),
  /** the sealed proxy user name and password (JSON); null when the proxy takes none */
  credentialsSealed: text('credentials_sealed'),
  /** the organization's model traffic goes through its default proxy */
  isDefault: boolean('is_default').notNull().default(false),
  createdBy: text('created_by'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [
  index('proxies_org_idx').on(t.orgId),
  // at most one default proxy per organization
  uniqueIndex('proxies_org_default_uq').on(t.orgId).where(sql`is_default`),
]);
