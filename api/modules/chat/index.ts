// The chat module: a member's chat sessions in a space, turns streamed as Server-Sent Events from
// the organization's model (through the core-providers configuration and the egress guard), the
// caller's agents as tools, skills a space enforces in every chat, and a usage check hook other
// modules fill (usage.ts).
import type { ApiModule } from '../../app.ts';
import type { AppDeps } from '../../deps.ts';
import { chatRoutes } from './routes.ts';
import type { ChatEngine } from './turn.ts';
import { liveSessions } from './live-sessions.ts';

export { addChatUsageCheck, type ChatUsageCheck, type ChatUsageQuestion, type UsageRefusal } from './usage.ts';

export async function loadChat(deps: AppDeps): Promise<ApiModule> {
  const engine: ChatEngine = { live: liveSessions(deps.cache, deps.config.CHAT_MAX_LIVE_SESSIONS) };
  return { name: 'chat', routes: chatRoutes(deps, engine) };
}
