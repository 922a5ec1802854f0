// Members of an agent manifest.
import { isJsonObject, withoutUndefined, type FieldReader, type JsonObject } from './field-reader.ts';
import { checkPackageIdKey, readSchemaHolder, readToolNames, readVersionRange } from './manifest-common.ts';
import { RUNTIME_TOOLS, type AgentManifest, type RuntimeTool } from './manifest-types.ts';

export const AGENT_KEYS = ['timeout', 'input', 'output', 'dependencies', 'integrations_configuration', 'runtime_tools'] as const;

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
