// /api/chat (chat module). Sessions belong to the signed-in member who opened them, in the space
// of X-Space-Id; API keys are refused (403): a chat is a person's conversation, and its realtime
// change signal needs a session. A turn answers as a Server-Sent Events stream (turn.ts).
import { z } from 'zod';
import { spaceScopeOf } from '../../../db/tenant.ts';
import type { AppDeps } from '../../deps.ts';
import { CursorQuery, cursorList, cursorPage, limitParam } from '../../lists.ts';
import { problem } from '../../../lib/problem.ts';
import { created, noContent, ok, route } from '../../route.ts';
import { publishChatSessionUpdate } from '../../services/realtime/publish.ts';
import { createSession, deleteSession, getSessionRow, listMessages, listSessions, toSessionWire } from './sessions.ts';
import { listEnforcedSkills, noteInjectedDrafts, setEnforcedSkills } from './skills.ts';
import { postTurn, type ChatEngine } from './turn.ts';
import type { Need } from '../../../lib/permissions.ts';

const TAG = 'Chat';
const PAGE = { def: 100, max: 100 };
const PACKAGE_ID = z.string().regex(/^@[a-z0-9][a-z0-9-]*\/[a-z0-9][a-z0-9._-]*$/).max(255);
const IdParams = z.object({ id: z.string().max(64) });

const ToolCall = z.object({ id: z.string(), type: z.literal('function'), function: z.object({ name: z.string(), arguments: z.string() }) });
const ChatSession = z.object({
  id: z.string().describe('chat_...'),
  object: z.literal('chat_session'),
  spaceId: z.string(),
  title: z.string().nullable(),
  model_id: z.string().nullable().describe("the model the session talks to; null: the organization's default"),
  injected_drafts: z.array(z.string()).describe('skills whose draft this session injected'),
  message_count: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'ChatSession' });
const ChatMessage = z.object({
  id: z.string().describe('cmsg_...'),
  object: z.literal('chat_message'),
  role: z.enum(['user', 'assistant', 'tool']),
  content: z.string(),
  tool_calls: z.array(ToolCall).nullable(),
  tool_call_id: z.string().nullable(),
  createdAt: z.string(),
}).meta({ id: 'ChatMessage' });
const ChatSessionWithMessages = ChatSession.extend({ messages: z.array(ChatMessage) }).meta({ id: 'ChatSessionWithMessages' });
const ChatSessionList = z.object({ object: z.literal('list'), data: z.array(ChatSession), hasMore: z.boolean() });
const EnforcedSkill = z.object({ packageId: z.string(), position: z.number().int(), createdAt: z.string() }).meta({ id: 'ChatEnforcedSkill' });
const EnforcedSkillList = z.object({ object: z.literal('list'), data: z.array(EnforcedSkill), hasMore: z.boolean() });

const TURN_STREAM = {
  200: {
    description: 'A text/event-stream of turn, token, tool_call, tool_result, done and error events',
    contentType: 'text/event-stream',
    schema: z.string(),
  },
};

export function chatRoutes(deps: AppDeps, engine: ChatEngine) {
  const common = { tag: TAG, tenant: 'space' as const, sessionOnly: true, permission: 'signed-in' as Need };
  return [
    route({
      ...common, method: 'post', path: '/api/chat/sessions', summary: 'Open a chat session (optionally injecting skill drafts to try)',
      rateLimit: { perMinute: 60 }, location: (b) => `/api/chat/sessions/${b.id}`,
      body: z.object({
        title: z.string().min(1).max(200).optional(),
        model_id: z.string().min(1).max(64).optional().describe("a model of the organization; default: the organization's default model"),
        draft_skills: z.array(PACKAGE_ID).max(5).optional().describe('skills whose current draft goes into this session; a later change of the draft ends the session with 409 injected_draft_changed'),
      }).strict(),
      responses: { 201: { description: 'The session', schema: ChatSession } },
      handler: async ({ ctx, body, deps }) => {
        const scope = spaceScopeOf(ctx, deps.database);
        // a draft is read into the chat: it takes the permission that reads it
        if (body.draft_skills?.length && !ctx.permissions.has('skills:read')) throw problem('forbidden', { detail: 'Injecting a skill draft needs skills:read in this space.' });
        const injected = await noteInjectedDrafts(scope, body.draft_skills ?? []);
        const row = await createSession(scope, { title: body.title, modelId: body.model_id, injected });
        await publishChatSessionUpdate(deps, { orgId: row.org_id, spaceId: row.space_id, userId: row.user_id, session: { ...toSessionWire(row), change: 'created' } });
        return created(toSessionWire(row));
      },
    }),
    route({
      ...common, method: 'get', path: '/api/chat/sessions', summary: "The caller's chat sessions in the space (cursor-paged, default 100)",
      rateLimit: { perMinute: 300 }, query: CursorQuery.extend({ limit: limitParam(PAGE) }),
      responses: { 200: { description: 'A page of sessions', schema: ChatSessionList } },
      handler: async ({ ctx, query, req, deps }) => {
        const page = cursorPage(query, PAGE);
        const rows = await listSessions(spaceScopeOf(ctx, deps.database), page);
        const { body, headers } = cursorList(req, page, rows);
        return ok(body, headers);
      },
    }),
    route({
      ...common, method: 'get', path: '/api/chat/sessions/{id}', summary: 'Read a chat session with its messages',
      rateLimit: { perMinute: 300 }, params: IdParams,
      responses: { 200: { description: 'The session and its messages in order', schema: ChatSessionWithMessages } },
      handler: async ({ ctx, params, deps }) => {
        const scope = spaceScopeOf(ctx, deps.database);
        const row = await getSessionRow(scope, params.id);
        return ok({ ...toSessionWire(row), messages: await listMessages(scope, row.id) });
      },
    }),
    route({
      ...common, method: 'post', path: '/api/chat/sessions/{id}/messages', summary: "Post a turn; the model's answer streams back as Server-Sent Events",
      rateLimit: { perMinute: (config) => config.CHAT_TURN_RATE_PER_MIN }, params: IdParams,
      body: z.object({ content: z.string().min(1).max(32_000) }).strict(),
      responses: TURN_STREAM,
      handler: async ({ ctx, params, body, req, res, deps }) => postTurn({ ctx, deps, engine, sessionId: params.id, content: body.content, req, res }),
    }),
    route({
      ...common, method: 'delete', path: '/api/chat/sessions/{id}', summary: 'Delete a chat session and its messages',
      rateLimit: { perMinute: 60 }, params: IdParams,
      responses: { 204: { description: 'Deleted' } },
      handler: async ({ ctx, params, deps }) => {
        const row = await deleteSession(spaceScopeOf(ctx, deps.database), params.id);
        await publishChatSessionUpdate(deps, { orgId: row.org_id, spaceId: row.space_id, userId: row.user_id, session: { ...toSessionWire(row), change: 'deleted' } });
        return noContent();
      },
    }),
    route({
      ...common, method: 'get', path: '/api/chat/enforced-skills', summary: "Skills enforced in every chat of the space",
      permission: 'skills:read', rateLimit: { perMinute: 300 },
      responses: { 200: { description: 'The enforced skills in order', schema: EnforcedSkillList } },
      handler: async ({ ctx, deps }) => ok({ object: 'list', data: await listEnforcedSkills(spaceScopeOf(ctx, deps.database)), hasMore: false }),
    }),
    route({
      ...common, method: 'put', path: '/api/chat/enforced-skills', summary: "Replace the skills enforced in every chat of the space (space admins)",
      permission: 'space-members:write', rateLimit: { perMinute: 10 },
      body: z.object({ skills: z.array(PACKAGE_ID).max(100).describe('skill package ids, in the order their SKILL.md enters the chat; [] enforces none') }).strict(),
      responses: { 200: { description: 'The enforced skills in order', schema: EnforcedSkillList } },
      handler: async ({ ctx, body, deps }) => ok({ object: 'list', data: await setEnforcedSkills(spaceScopeOf(ctx, deps.database), deps.config, body.skills), hasMore: false }),
    }),
  ];
}
