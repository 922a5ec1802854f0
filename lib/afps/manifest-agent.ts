// Members of an agent manifest.
import { isJsonObject, withoutUndefined, type FieldReader, type JsonObject } from './field-reader.ts';
import { checkPackageIdKey, readSchemaHolder, readToolNames, readVersionRange } from './manifest-common.ts';
import { RUNTIME_TOOLS, type AgentManifest, type RuntimeTool } from './manifest-types.ts';

export const AGENT_KEYS = ['timeout', 'input', 'output', 'dependencies', 'integrations_configuration', 'runtime_tools', 'approvals'] as const;

/** The platform's own tools every agent has besides its runtime tools (sidecar/first-party-tools.ts). */
export const FIRST_PARTY_TOOLS = ['run_history', 'recall_memory'] as const;
/** How long an approval request waits for a decision unless the manifest says otherwise. */
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 86_400;

/** The name an integration's tool has for the agent: `<scope>_<name>__<tool>` (scope without "@"). */
export function integrationToolName(packageId: string, tool: string): string {
  return `${packageId.replace(/^@/, '').replace('/', '_')}__${tool}`;
}

type AgentMembers = Omit<AgentManifest, 'name' | 'version' | 'type' | 'schema_version' | 'display_name' | 'description' | 'author' | '$schema'>;

export function readAgentMembers(r: FieldReader, raw: JsonObject, timeoutCeilingSeconds: number): AgentMembers {
  const out: AgentMembers = {};

  const timeout = r.integer('timeout', raw.timeout, { min: 1 });
  if (timeout !== undefined) out.timeout = Math.min(timeout, timeoutCeilingSeconds);

  out.input = readSchemaHolder(r, 'input', raw.input);
  out.output = readSchemaHolder(r, 'output', raw.output);

  const dependencies = r.object('dependencies', raw.dependencies, ['skills', 'integrations']);
  if (dependencies) {
    out.dependencies = withoutUndefined({
      skills: readDependencyMap(r, 'dependencies.skills', dependencies.skills),
      integrations: readDependencyMap(r, 'dependencies.integrations', dependencies.integrations),
    });
  }

  const configured = r.map('integrations_configuration', raw.integrations_configuration);
  if (configured) {
    const declared = isJsonObject(dependencies?.integrations) ? Object.keys(dependencies.integrations) : [];
    const config: NonNullable<AgentManifest['integrations_configuration']> = {};
    for (const [id, item, path] of configured) {
      if (!checkPackageIdKey(r, path, id)) continue;
      if (!declared.includes(id)) {
        r.fail(path, 'invalid_key', 'configures an integration that dependencies.integrations does not declare');
        continue;
      }
      const entry = r.object(path, item, ['tools']);
      if (!entry) continue;
      const tools = readToolNames(r, `${path}.tools`, entry.tools, true);
      // an integration the agent selects without any of its tools gives the agent nothing to call
      if (tools && tools.length === 0) r.fail(`${path}.tools`, 'no_tools_selected', 'must select at least one tool of the integration');
      else if (tools) config[id] = { tools };
    }
    out.integrations_configuration = config;
  }

  const runtimeTools = r.stringList('runtime_tools', raw.runtime_tools, {
    element: (path, tool) => (RUNTIME_TOOLS as readonly string[]).includes(tool)
      || (r.fail(path, 'invalid_value', `must be one of ${RUNTIME_TOOLS.join(', ')}`), false),
  });
  if (runtimeTools) out.runtime_tools = runtimeTools as RuntimeTool[];

  // Without the output tool the agent has no way to hand back the result its schema promises.
  if (isJsonObject(raw.output) && raw.output.schema !== undefined && r.clean('runtime_tools')) {
    const listed = Array.isArray(raw.runtime_tools) ? raw.runtime_tools : [];
    if (!listed.includes('output')) {
      r.fail('runtime_tools', 'invalid_value', 'must include output when output.schema is declared');
    }
  }

  const approvals = r.object('approvals', raw.approvals, ['tools', 'timeout_seconds']);
  if (approvals) {
    // Only tools the agent has can be gated: its runtime tools, the first-party ones and the tools it selected of its integrations.
    const known = new Set<string>([...(out.runtime_tools ?? []), ...FIRST_PARTY_TOOLS]);
    for (const [id, { tools }] of Object.entries(out.integrations_configuration ?? {})) for (const tool of tools) known.add(integrationToolName(id, tool));
    const tools = r.stringList('approvals.tools', approvals.tools, {
      required: true,
      element: (path, tool) => known.has(tool) || (r.fail(path, 'invalid_value', `names no tool of this agent (${tool}); its tools are ${[...known].join(', ')}`), false),
    });
    const timeoutSeconds = r.integer('approvals.timeout_seconds', approvals.timeout_seconds, { min: 1, max: 30 * 86_400 });
    if (tools) out.approvals = { tools, timeout_seconds: timeoutSeconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS };
  }

  return withoutUndefined(out);
}

function readDependencyMap(r: FieldReader, field: string, value: unknown): Record<string, string> | undefined {
  const entries = r.map(field, value);
  if (!entries) return undefined;
  const map: Record<string, string> = {};
  for (const [id, range, path] of entries) {
    if (!checkPackageIdKey(r, path, id)) continue;
    const checked = readVersionRange(r, path, range, true);
    if (checked !== undefined) map[id] = checked;
  }
  return map;
}
