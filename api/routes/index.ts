// Every route family of the core API.
import type { RouteDef } from '../route.ts';
import { endUserRoutes } from './end-users.ts';
import { runRoutes } from './runs.ts';
import { runSinkRoutes } from './run-sink.ts';
import { runApprovalRoutes } from './run-approvals.ts';
import { runsElsewhereRoutes } from './runs-elsewhere.ts';
import { agentConfigRoutes } from './agent-config.ts';
import { apiKeyRoutes } from './api-keys.ts';
import { authRoutes } from './auth.ts';
import { signInOptionRoutes } from './auth-sign-in-options.ts';
import { invitationRoutes } from './invitations.ts';
import { orgRoutes } from './orgs.ts';
import { spaceRoleRoutes } from './space-roles.ts';
import { spaceRoutes } from './spaces.ts';
import { packageRoutes } from './packages.ts';
import { packageDraftRoutes } from './package-drafts.ts';
import { packagePlacementRoutes } from './package-placement.ts';
import { packageForkRoutes } from './package-forks.ts';
import { packageBundleRoutes } from './package-bundles.ts';
import { packageDistTagRoutes } from './package-dist-tags.ts';
import { integrationRoutes } from './integrations.ts';
import { llmProxyRoutes } from './llm-proxy.ts';
import { orgBudgetRoutes } from './org-budgets.ts';
import { scheduleRoutes } from './schedules.ts';
import { notificationRoutes } from './notifications.ts';
import { fileRoutes } from './files.ts';
import { realtimeRoutes } from './realtime.ts';

export function allRoutes(): RouteDef<any, any, any>[] {
  return [
    ...endUserRoutes,
    ...runRoutes,
    ...runApprovalRoutes,
    ...runSinkRoutes,
    ...runsElsewhereRoutes,
    ...agentConfigRoutes,
    ...authRoutes,
    ...signInOptionRoutes,
    ...orgRoutes,
    ...invitationRoutes,
    ...spaceRoleRoutes,
    ...spaceRoutes,
    ...apiKeyRoutes,
    ...packageRoutes,
    ...packageDraftRoutes,
    ...packagePlacementRoutes,
    ...packageForkRoutes,
    ...packageBundleRoutes,
    ...packageDistTagRoutes,
    ...integrationRoutes,
    ...llmProxyRoutes,
    ...orgBudgetRoutes,
    ...scheduleRoutes,
    ...notificationRoutes,
    ...fileRoutes,
    ...realtimeRoutes,
  ];
}
