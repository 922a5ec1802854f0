// Chat sessions and their messages. A session belongs to the member who opened it, in one space:
// every query filters by organization, space and owner, so another member's session is not found.
import { newId } from '../../../lib/ids.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import type { CursorPage } from '../../lists.ts';
import type { InjectedDraft } from './skills.ts';

export interface ChatSessionWire {
  id: string;
  object: 'chat_session';
  spaceId: string;
  title: string | null;
  model_id: string | null;
  injected_drafts: string[];
  message_count: number;
  createdAt: string;
  updatedAt: string;
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessageWire {
  id: string;
  object: 'chat_message';
  role: 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls: ToolCall[] | null;
  tool_call_id: string | null;
  createdAt: string;
}

export interface SessionRow {
  id: string;
  org_id: string;
  space_id: string;
  user_id: string;
  title: string | null;
  model_id: string | null;
  injected_drafts: InjectedDraft[];
  message_count: number;
  created_at: Date;
  updated_at: Date;
}

interface MessageRow {
  id: string;
  role: ChatMessageWire['role'];
  content: string;
  tool_calls: ToolCall[] | null;
  tool_call_id: string | null;
  created_at: Date;
}

export function toSessionWire(r: SessionRow): ChatSessionWire {
  return {
    id: r.id, object: 'chat_session', spaceId: r.space_id, title: r.title, model_id: r.model_id,
    injected_drafts: r.injected_drafts.map((d) => d.packageId), message_count: r.message_count,
    createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString(),
  };
}

function toMessageWire(r: MessageRow): ChatMessageWire {
  return { id: r.id, object: 'chat_message', role: r.role, content: r.content, tool_calls: r.tool_calls, tool_call_id: r.tool_call_id, createdAt: r.created_at.toISOString() };
}

const OWNER = 'org_id = $1 AND space_id = $2 AND user_id = $3';
const ownerParams = (scope: SpaceScope) => [scope.orgId, scope.spaceId, scope.actor.userId];

export async function createSession(scope: SpaceScope, fields: { title?: string; modelId?: string; injected: InjectedDraft[] }): Promise<SessionRow> {
  const { rows } = await scope.pool.query<SessionRow>(
    `INSERT INTO chat_sessions (id, org_id, space_id, user_id, title, model_id, injected_drafts)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [newId('chat'), scope.orgId, scope.spaceId, scope.actor.userId, fields.title ?? null, fields.modelId ?? null, JSON.stringify(fields.injected)],
  );
  return rows[0];
}

/** The caller's own session, else 404 not_found. */
export async function getSessionRow(scope: SpaceScope, id: string): Promise<SessionRow> {
  const { rows } = await scope.pool.query<SessionRow>(`SELECT * FROM chat_sessions WHERE id = $4 AND ${OWNER}`, [...ownerParams(scope), id]);
  if (!rows[0]) throw problem('not_found', { detail: `No chat session ${id}.` });
  return rows[0];
}

/** The caller's sessions in the space in creation order, cursor-paged (limit + 1 rows, in the page's direction). */
export async function listSessions(scope: SpaceScope, page: CursorPage): Promise<ChatSessionWire[]> {
  const params: unknown[] = ownerParams(scope);
  let where = OWNER;
  let order = 'ASC';
  if (page.startingAfter) where += ` AND id > $${params.push(page.startingAfter)}`;
  else if (page.endingBefore) {
    where += ` AND id < $${params.push(page.endingBefore)}`;
    order = 'DESC';
  }
  const { rows } = await scope.pool.query<SessionRow>(
    `SELECT * FROM chat_sessions WHERE ${where} ORDER BY id ${order} LIMIT $${params.push(page.limit + 1)}`,
    params,
  );
  return rows.map(toSessionWire);
}

export async function listMessages(scope: SpaceScope, sessionId: string): Promise<ChatMessageWire[]> {
  const { rows } = await scope.pool.query<MessageRow>(
    'SELECT id, role, content, tool_calls, tool_call_id, created_at FROM chat_messages WHERE session_id = $1 AND org_id = $2 ORDER BY seq',
    [sessionId, scope.orgId],
  );
  return rows.map(toMessageWire);
}

export async function deleteSession(scope: SpaceScope, id: string): Promise<SessionRow> {
  const { rows } = await scope.pool.query<SessionRow>(`DELETE FROM chat_sessions WHERE id = $4 AND ${OWNER} RETURNING *`, [...ownerParams(scope), id]);
  if (!rows[0]) throw problem('not_found', { detail: `No chat session ${id}.` });
  return rows[0];
}

export interface NewMessage {
  role: ChatMessageWire['role'];
  content: string;
  toolCalls?: ToolCall[];
  toolCallId?: string;
}

/** Appends messages in order and bumps the session; answers the session as it now is. */
export async function appendMessages(scope: SpaceScope, sessionId: string, messages: NewMessage[]): Promise<SessionRow> {
  const client = await scope.pool.connect();
  try {
    await client.query('BEGIN');
    for (const m of messages) {
      await client.query(
        'INSERT INTO chat_messages (id, session_id, org_id, role, content, tool_calls, tool_call_id) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [newId('cmsg'), sessionId, scope.orgId, m.role, m.content, m.toolCalls ? JSON.stringify(m.toolCalls) : null, m.toolCallId ?? null],
      );
    }
    const { rows } = await client.query<SessionRow>(
      `UPDATE chat_sessions SET message_count = message_count + $5, updated_at = now() WHERE id = $4 AND ${OWNER} RETURNING *`,
      [...ownerParams(scope), sessionId, messages.length],
    );
    await client.query('COMMIT');
    if (!rows[0]) throw problem('not_found', { detail: `No chat session ${sessionId}.` });
    return rows[0];
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
