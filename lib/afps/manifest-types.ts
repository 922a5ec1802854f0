// The AFPS manifest (schema_version 0.3) as parseManifest returns it. Member names are the wire
// names of manifest.json.
import type { PackageId } from './package-id.ts';

export const PACKAGE_TYPES = ['agent', 'skill', 'mcp-server', 'integration'] as const;
export type PackageType = (typeof PACKAGE_TYPES)[number];

export const SCHEMA_VERSION = '0.3';

export const RUNTIME_TOOLS = ['output', 'log', 'note', 'pin', 'publish_file'] as const;
export type RuntimeTool = (typeof RUNTIME_TOOLS)[number];

export type JsonSchemaObject = Record<string, unknown>;

interface ManifestBase {
  /** optional pointer to a JSON Schema for editors; not interpreted */
  $schema?: string;
  name: PackageId;
  version: string;
  type: PackageType;
  schema_version?: typeof SCHEMA_VERSION;
  display_name?: string;
  description?: string;
  author?: string;
}

export interface AgentManifest extends ManifestBase {
  type: 'agent';
  /** seconds, already clamped to the platform ceiling */
  timeout?: number;
  input?: { schema: JsonSchemaObject };
  output?: { schema: JsonSchemaObject };
  dependencies?: {
    /** package id → semver range */
    skills?: Record<PackageId, string>;
    integrations?: Record<PackageId, string>;
  };
  /** integration id → the tools of it the agent uses */
  integrations_configuration?: Record<PackageId, { tools: string[] }>;
  runtime_tools?: RuntimeTool[];
  /** tool calls a person must approve before they are made (names as the agent sees them) */
  approvals?: { tools: string[]; timeout_seconds: number };
}

export interface SkillManifest extends ManifestBase {
  type: 'skill';
}

export interface McpServerManifest extends ManifestBase {
  type: 'mcp-server';
  server: {
    /** argv run from the package root, for example ["node", "server/index.js"] (stdio transport) */
    command: string[];
    env?: Record<string, string>;
  };
}

export type IntegrationSource =
  | { kind: 'none' }
  | { kind: 'remote'; url: string; transport: 'streamable-http' | 'sse' }
  | LocalIntegrationSource;

/** A third-party MCP server the sidecar starts: an mcp-server package, or a command in an image. */
export type LocalIntegrationSource =
  | { kind: 'local'; server: { name: PackageId; version: string }; env?: Record<string, string> }
  | { kind: 'local'; command: string[]; image?: string; env?: Record<string, string> };

export const AUTH_TYPES = ['oauth2', 'api_key', 'basic', 'custom', 'mtls'] as const;
export type AuthType = (typeof AUTH_TYPES)[number];

export const LOGIN_METHODS = ['GET', 'POST', 'PUT', 'PATCH'] as const;

export type LoginOutput =
  | { from: 'cookie'; name: string }
  | { from: 'header'; name: string }
  | { from: 'body'; path: string };

export interface ConnectLogin {
  request: {
    method: (typeof LOGIN_METHODS)[number];
    url: string;
    content_type?: string;
    /** {{field}} placeholders are filled from the connect form, as typed */
    body?: string;
  };
  /** each condition is one `<expression> == <value>`; parseSuccessCriterion reads it */
  success_criteria?: Array<{ condition: string }>;
  outputs: Record<string, LoginOutput>;
}

/** delivery.env: the environment variable a local MCP server receives its credential in. */
export interface EnvDelivery {
  name: string;
  value: string;
}

export interface IntegrationAuth {
  type: AuthType;
  credentials?: { schema: JsonSchemaObject };
  oauth2?: { authorization_url: string; token_url: string; scopes?: string[] };
  connect?: { login: ConnectLogin };
  authorized_uris?: string[];
  /**
   * http: the header the sidecar puts on requests to authorized_uris (the spec's). env (an extension,
   * source.kind local only, when the organization allows it): the variable the local server is
   * started with, holding the value rendered from the credential.
   */
  delivery?: { http?: { in: 'header'; name: string; prefix?: string; value: string }; env?: EnvDelivery };
  /** JSONPath expressions (lib/json-path.ts) naming the connection's account in the login or token answer */
  identity_claims?: { account_id?: string; label?: string };
}

export interface IntegrationManifest extends ManifestBase {
  type: 'integration';
  source: IntegrationSource;
  default_tools?: string[];
  auths?: Record<string, IntegrationAuth>;
}

export type Manifest = AgentManifest | SkillManifest | McpServerManifest | IntegrationManifest;
