// What the sidecar receives for each integration of its run: written by the worker's boot,
// read by the sidecar's tools. One shape for both ends.
import type { AuthType, IntegrationSource } from './manifest-types.ts';

/**
 * One integration the run's agent selected, with the connection resolved for the run at launch.
 * An integration that declares no auths (a public remote MCP server) has no connection: its
 * authKey and connectionId are null, its authorizedUris empty, delivery null and credentials {}.
 */
export interface IntegrationAssignment {
  /** "@scope/name" of the integration package */
  packageId: string;
  /** "<scope>_<name>" (scope without "@"): the agent's tool names are `${toolPrefix}__${tool}` */
  toolPrefix: string;
  /** the tools the agent selected in integrations_configuration (never empty) */
  tools: string[];
  /** the integration manifest's source (IntegrationSource of lib/afps/manifest-types.ts) */
  source: IntegrationSource;
  /** the auth the connection is of; null: the integration declares no auths */
  authKey: string | null;
  /** the auth's type: an OAuth 2 credential may be refreshed mid-run (the sidecar asks the platform) */
  authType?: AuthType;
  /** the connection the run bound at launch; null: none (nothing to read or refresh mid-run) */
  connectionId: string | null;
  /** the auth's authorized_uris as declared (may hold {$credential.<field>} templates) */
  authorizedUris: string[];
  /** the auth's delivery.http, or null when it declares none */
  delivery: { in: 'header'; name: string; prefix?: string; value: string } | null;
  /** decrypted credential fields and login/OAuth outputs (e.g. access_token): only the sidecar sees them */
  credentials: Record<string, string>;
}

/**
 * A local integration (source.kind local) of the run: its MCP server runs in a container of its own
 * beside the sidecar (the docker backend), behind a bridge that speaks the server's stdio over TCP.
 * The server holds no credential (except by delivery.env, which an organization allows): where the
 * auth declares delivery.http, the run's `integrations` hold an entry of the same package (source
 * local) whose credential the sidecar's egress proxy puts on the server's requests.
 */
export interface LocalIntegrationAssignment {
  /** "@scope/name" of the integration package */
  packageId: string;
  /** "<scope>_<name>": the agent's tool names are `${toolPrefix}__${tool}` */
  toolPrefix: string;
  /** the tools the agent selected (never empty) */
  tools: string[];
  /** where the server's bridge listens on the run's MCP network, and the token it asks for first */
  bridge: { host: string; port: number; token: string };
  /** the server's way out: the secret it presents to the sidecar's egress proxy, and where it may go */
  egress?: LocalEgressGrant;
}

/** What the sidecar's egress proxy lets one local server do. */
export interface LocalEgressGrant {
  /** presented as the password of the proxy URL's userinfo (Proxy-Authorization: Basic) */
  secret: string;
  /** the integration's literal authorized_uris: the only URLs the server reaches */
  authorizedUris: string[];
}

/** The port the sidecar's egress proxy for local servers listens on (its address on the run's MCP network). */
export const LOCAL_EGRESS_PROXY_PORT = 3128;
/** The user name of the proxy URL's userinfo (the secret is what authenticates). */
export const LOCAL_EGRESS_PROXY_USER = 'mcp';

/**
 * The standard proxy variables a local server is started with: every request it makes goes to
 * the sidecar's egress proxy (NO_PROXY empty: nothing bypasses it, nor could anything).
 */
export function localEgressEnv(proxyHost: string, secret: string): Record<string, string> {
  const url = `http://${LOCAL_EGRESS_PROXY_USER}:${secret}@${proxyHost}:${LOCAL_EGRESS_PROXY_PORT}`;
  return { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: '', no_proxy: '' };
}

/** The MCP server of one local integration (source.kind local), started in a runner of its own. */
export interface LocalServerSpec {
  /** the integration "@scope/name" (its entry in the sidecar's localIntegrations) */
  packageId: string;
  toolPrefix: string;
  tools: string[];
  /** argv of the stdio server, run from the package's folder (or the image's) */
  command: string[];
  /** an image the operator allows (LOCAL_INTEGRATION_IMAGES); null: the agent image */
  image: string | null;
  /** the manifest's env (the mcp-server package's, overridden by the integration's); never a platform secret */
  env: Record<string, string>;
  /** the integration's literal authorized_uris (every auth's): where its server may reach through the sidecar */
  authorizedUris?: string[];
  /**
   * an auth of the integration declares delivery.http: the sidecar may inject its credential into
   * the server's HTTPS requests, so the server starts only once the sidecar named the run's
   * certificate authority its runtime is to trust (bin/mcp-bridge.ts)
   */
  trustRunCa?: boolean;
  /** the mcp-server package's files, mounted read-only where the command runs; null for a command in an image */
  files: Array<{ path: string; content: Buffer }> | null;
}
