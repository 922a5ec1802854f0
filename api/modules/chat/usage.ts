// The usage check hook: other modules (billing, quotas) register a check that may refuse a chat
// turn. A refusal answers with the module's own code and status (403 when it names none) under the
// type usage-not-allowed, without instance or request_id (spec: usage_not_allowed).
import { problemType } from '../../../lib/problem.ts';
import { recordProblemCode } from '../../../lib/problem-log.ts';
import type { AppDeps } from '../../deps.ts';
import type { Reply } from '../../route.ts';

export interface ChatUsageQuestion {
  orgId: string;
  spaceId: string;
  userId: string;
  sessionId: string;
}

export interface UsageRefusal {
  /** the refusing module's own code (snake_case) */
  code: string;
  /** default 403 */
  status?: number;
  title?: string;
  detail?: string;
}

export type ChatUsageCheck = (question: ChatUsageQuestion) => Promise<UsageRefusal | null | undefined> | UsageRefusal | null | undefined;

// Per app instance, so two platforms in one process (tests) never share checks.
const checksByApp = new WeakMap<AppDeps, ChatUsageCheck[]>();

/** Registers a check run before every chat turn; returns its removal. */
export function addChatUsageCheck(deps: AppDeps, check: ChatUsageCheck): () => void {
  const list = checksByApp.get(deps) ?? [];
  list.push(check);
  checksByApp.set(deps, list);
  return () => {
    const i = list.indexOf(check);
    if (i >= 0) list.splice(i, 1);
  };
}

/** The first refusal of the registered checks, in registration order. */
export async function firstUsageRefusal(deps: AppDeps, question: ChatUsageQuestion): Promise<UsageRefusal | null> {
  for (const check of checksByApp.get(deps) ?? []) {
    const refusal = await check(question);
    if (refusal) return refusal;
  }
  return null;
}

const CODE = /^[a-z][a-z0-9_]{0,63}$/;

/** The refusal's wire answer: no instance, no request_id (the Request-Id header still carries it). */
export function usageRefusalReply(typeBase: string, refusal: UsageRefusal): Reply {
  const status = Number.isInteger(refusal.status) && refusal.status! >= 400 && refusal.status! <= 599 ? refusal.status! : 403;
  const code = CODE.test(refusal.code) ? refusal.code : 'usage_not_allowed';
  recordProblemCode('usage_not_allowed');
  return {
    status,
    headers: { 'Content-Type': 'application/problem+json; charset=utf-8' },
    body: {
      type: problemType(typeBase, 'usage_not_allowed'),
      title: refusal.title ?? 'Refused by a module usage check',
      status,
      detail: refusal.detail ?? 'A usage check refused this chat turn.',
      code,
    },
  };
}
