// The sandbox-boot side of local integrations (source.kind local): what the runner must start for
// each one the agent selected tools of. An integration naming an mcp-server package runs that
// package's server.command from its files; one naming a command runs it in its image (checked
// against LOCAL_INTEGRATION_IMAGES at launch and again at boot). The server's environment is the
// manifests' env only: the mcp-server package's, overridden by the integration's, beside the proxy
// variables its runner adds. No platform secret reaches it, and its connection's credential only
// where the auth declares delivery.env and the organization allows it (runCredentialEnv). Its requests may reach
// the literal authorized_uris of the integration's auths, through the sidecar's egress proxy, which
// puts a delivery.http credential on them (trustRunCa: HTTPS ends at the proxy, with the run's authority).
import { parseAuthorizedUri } from '../../../lib/afps/authorized-uri.ts';
import type { LocalServerSpec } from '../../../lib/afps/integration-assignment.ts';
import type { AgentManifest, IntegrationManifest, McpServerManifest } from '../../../lib/afps/manifest-types.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { resolveAgentIntegrations } from '../packages/dependencies.ts';
import { selectedTools } from './readiness.ts';
import { toolPrefixOf } from './run-credentials.ts';

/** Every auth's authorized_uris that need no credential to render (a local server holds none). */
function literalAuthorizedUris(manifest: IntegrationManifest): string[] {
  const uris = Object.values(manifest.auths ?? {}).flatMap((auth) => auth.authorized_uris ?? []);
  return [...new Set(uris.filter((uri) => {
    const parsed = parseAuthorizedUri(uri);
    return typeof parsed !== 'string' && parsed.literal;
  }))];
}

/**
 * `credentialEnv`: by package, the variables its server receives its credential in (delivery.env,
 * runCredentialEnv); set over the manifests' env.
 */
export async function runLocalServers(scope: SpaceScope, owner: string, agent: AgentManifest, credentialEnv: Record<string, Record<string, string>> = {}): Promise<LocalServerSpec[]> {
  const declared = Object.keys(agent.dependencies?.integrations ?? {});
  if (declared.length === 0) return [];
  const { integrations, mcpServers } = await resolveAgentIntegrations(scope, owner, agent);
  const out: LocalServerSpec[] = [];
  for (const integration of integrations) {
    const manifest = integration.manifest as IntegrationManifest;
    const source = manifest.source;
    if (source.kind !== 'local') continue;
    const tools = selectedTools(agent, { id: integration.id, version: integration.version, manifest });
    if (tools.length === 0) continue;
    const trustRunCa = Object.values(manifest.auths ?? {}).some((auth) => auth.delivery?.http !== undefined);
    const base = { packageId: integration.id, toolPrefix: toolPrefixOf(integration.id), tools, authorizedUris: literalAuthorizedUris(manifest), ...(trustRunCa ? { trustRunCa } : {}) };
    if ('server' in source) {
      const server = mcpServers.find((s) => s.id === source.server.name)!;
      const { command, env } = (server.manifest as McpServerManifest).server;
      const files = [...server.files].map(([path, content]) => ({ path, content }));
      out.push({ ...base, command, image: null, env: { ...env, ...source.env, ...credentialEnv[integration.id] }, files });
    } else {
      out.push({ ...base, command: source.command, image: source.image ?? null, env: { ...source.env, ...credentialEnv[integration.id] }, files: null });
    }
  }
  return out;
}
