// Realtime payloads too large for a NOTIFY: the notification carries the row's id instead, and
// every instance reads the body from here. Rows are swept a few minutes after they were written.
import { bigserial, index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

export const realtimePayloads = pgTable('realtime_payloads', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  body: text('body').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
}, (t) => [index('realtime_payloads_created_idx').on(t.createdAt)]);
