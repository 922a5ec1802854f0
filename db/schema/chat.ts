// Chat (chat module): a member's chat sessions in a space, their messages, and the skills a space
// enforces in every chat.
import { bigint, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { organizations, spaces } from './identity.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const chatSessions = pgTable('chat_sessions', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  /** the member the session belongs to: nobody else reads it */
  userId: text('user_id').notNull(),
  title: text('title'),
  /** the model the session talks to; null: the organization's default */
  modelId: text('model_id'),
  /** skill drafts injected at creation: package id and the draft integrity seen then */
  injectedDrafts: jsonb('injected_drafts').$type<Array<{ packageId: string; integrity: string }>>().notNull().default([]),
  messageCount: integer('message_count').notNull().default(0),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [index('chat_sessions_owner_idx').on(t.orgId, t.spaceId, t.userId, t.id)]);

export const chatMessages = pgTable('chat_messages', {
  id: text('id').primaryKey(),
  sessionId: text('session_id').notNull().references(() => chatSessions.id, { onDelete: 'cascade' }),
  orgId: uuid('org_id').notNull(),
  /** user, assistant or tool */
  role: text('role').notNull(),
  content: text('content').notNull().default(''),
  /** an assistant message's tool calls, as the model sent them */
  toolCalls: jsonb('tool_calls'),
  /** a tool message answers this call */
  toolCallId: text('tool_call_id'),
  createdAt: ts('created_at').notNull().defaultNow(),
  /** insertion order (migration 0026): several messages of a turn share a millisecond, so their ids do not order them */
  seq: bigint('seq', { mode: 'number' }).notNull(),
}, (t) => [index('chat_messages_session_idx').on(t.sessionId, t.seq)]);

export const chatEnforcedSkills = pgTable('chat_enforced_skills', {
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  packageId: text('package_id').notNull(),
  position: integer('position').notNull(),
  createdBy: text('created_by').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [primaryKey({ columns: [t.orgId, t.spaceId, t.packageId] })]);
