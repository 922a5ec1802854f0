// parseManifest: the one gate every AFPS manifest (schema_version 0.3) passes, read or written.
// All faults are reported at once, one errors[] entry per offending field.
import { problem } from '../problem.ts';
import { FieldReader, isJsonObject, withoutUndefined, type JsonObject } from './field-reader.ts';
import { AGENT_KEYS, readAgentMembers } from './manifest-agent.ts';
import { COMMON_KEYS, readCommon } from './manifest-common.ts';
import { INTEGRATION_KEYS, readIntegrationMembers } from './manifest-integration.ts';
import { MCP_SERVER_KEYS, readMcpServerMembers } from './manifest-mcp-server.ts';
import type { Manifest, PackageType } from './manifest-types.ts';

export type {
  AgentManifest, AuthType, ConnectLogin, IntegrationAuth, IntegrationManifest, IntegrationSource,
  JsonSchemaObject, LoginOutput, Manifest, McpServerManifest, PackageType, RuntimeTool, SkillManifest,
} from './manifest-types.ts';
export { PACKAGE_TYPES, RUNTIME_TOOLS, SCHEMA_VERSION } from './manifest-types.ts';

export interface ParseManifestOptions {
  /** the platform's timeout ceiling: a longer agent timeout is clamped to it */
  timeoutCeilingSeconds: number;
}

const TYPE_KEYS: Record<PackageType, readonly string[]> = {
  agent: AGENT_KEYS,
  skill: [],
  'mcp-server': MCP_SERVER_KEYS,
  integration: INTEGRATION_KEYS,
};

export function parseManifest(raw: unknown, opts: ParseManifestOptions): Manifest {
  if (!isJsonObject(raw)) {
    throw problem('invalid_manifest', {
      detail: 'The manifest must be a JSON object.',
      errors: [{ field: 'manifest', code: 'invalid_type', message: 'must be a JSON object' }],
    });
  }

  const r = new FieldReader();
  const common = readCommon(r, raw);
  const type = common.type;
  let members: JsonObject = {};
  if (type) {
    r.onlyKeys('', raw, [...COMMON_KEYS, ...TYPE_KEYS[type]]);
    if (type === 'agent') members = { ...readAgentMembers(r, raw, opts.timeoutCeilingSeconds) };
    if (type === 'mcp-server') members = { ...readMcpServerMembers(r, raw) };
    if (type === 'integration') members = { ...readIntegrationMembers(r, raw) };
  }

  if (r.errors.length > 0) {
    // an identity_claims expression outside the JSONPath subset has its own code; errors[] still names every fault
    const claim = r.errors.find((e) => e.code === 'invalid_jsonpath');
    if (claim) {
      throw problem('invalid_config', { detail: `The manifest's ${claim.field} ${claim.message}.`, errors: r.errors });
    }
    const first = r.errors[0];
    const more = r.errors.length > 1 ? ` (and ${r.errors.length - 1} more)` : '';
    throw problem('invalid_manifest', {
      detail: `The manifest is invalid: ${first.field} ${first.message}${more}.`,
      errors: r.errors,
    });
  }
  return withoutUndefined({ ...common, ...members }) as unknown as Manifest;
}
