// The tools of a local integration (source.kind local): its MCP server runs in a runner of its own
// (the docker backend's container, behind its bridge); the sidecar is its only client, through the
// official SDK client over the bridge's connection, and serves the selected tools under the naming
// rule, like a remote integration's. The server holds no credential (unless its auth declares
// delivery.env): the sidecar's egress proxy puts a delivery.http one on its requests.
import type { LocalIntegrationAssignment } from './assignment.ts';
import { BridgeTransport } from './bridge-transport.ts';
import { servedTools, type ToolsClient } from './mcp-served-tools.ts';
import { toolError, type SidecarTool, type ToolAnswer } from './tool.ts';

const CONNECT_TIMEOUT_MS = 15_000;
const CALL_TIMEOUT_MS = 600_000;

interface LocalClient extends ToolsClient {
  close(): Promise<void>;
  onclose?: () => void;
}

export interface LocalConnection {
  client(): Promise<LocalClient>;
  close(): Promise<void>;
}

/** The SDK client of one local server: connected on first use, and again once the connection is lost. */
/** trust: the run's certificate authority, handed to the bridge when the server's credential is injected over HTTPS */
export function localConnection(integration: LocalIntegrationAssignment, trust?: string): LocalConnection {
  let pending: Promise<LocalClient> | undefined;
  const connect = async (): Promise<LocalClient> => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new Client({ name: 'agent-platform-sidecar', version: '1.0.0' });
    await client.connect(new BridgeTransport(integration.bridge, CONNECT_TIMEOUT_MS, trust), { timeout: CONNECT_TIMEOUT_MS });
    return client as unknown as LocalClient;
  };
  return {
    client() {
      if (!pending) {
        const attempt: Promise<LocalClient> = connect().then(
          (client) => {
            client.onclose = () => {
              if (pending === attempt) pending = undefined;
            };
            return client;
          },
          (err) => {
            if (pending === attempt) pending = undefined;
            throw err;
          },
        );
        pending = attempt;
      }
      return pending;
    },
    async close() {
      const open = pending;
      pending = undefined;
      if (open) await open.then((c) => c.close()).catch(() => undefined);
    },
  };
}

function failure(err: unknown, integration: LocalIntegrationAssignment): ToolAnswer {
  const message = String((err as Error)?.message ?? err).slice(0, 500);
  if (/timed out/i.test(message)) return toolError(`upstream_timeout: the MCP server of ${integration.packageId} did not answer in time`);
  return toolError(`upstream_unreachable: the MCP server of ${integration.packageId} failed: ${message}`);
}

/** The selected tools of a local integration, as its server lists them (listed once, at the start). */
export async function localTools(integration: LocalIntegrationAssignment, connection: LocalConnection): Promise<SidecarTool[]> {
  return servedTools({
    packageId: integration.packageId, toolPrefix: integration.toolPrefix, tools: integration.tools,
    client: () => connection.client(), listTimeoutMs: CONNECT_TIMEOUT_MS, callTimeoutMs: CALL_TIMEOUT_MS,
    failure: (err) => failure(err, integration),
  });
}
