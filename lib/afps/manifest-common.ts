// Members every manifest shares, and the small readers the type-specific parts reuse.
import { FieldReader, isJsonObject, type JsonObject } from './field-reader.ts';
import { jsonSchemaProblem } from './json-schema.ts';
import { PACKAGE_TYPES, SCHEMA_VERSION, type JsonSchemaObject, type PackageType } from './manifest-types.ts';
import { MAX_PACKAGE_ID_LENGTH, packageIdProblem } from './package-id.ts';
import { isExactVersion, isVersionRange } from './versions.ts';

export const COMMON_KEYS = ['$schema', 'name', 'version', 'type', 'schema_version', 'display_name', 'description', 'author'] as const;

export interface CommonMembers {
  $schema?: string;
  name?: string;
  version?: string;
  type?: PackageType;
  schema_version?: typeof SCHEMA_VERSION;
  display_name?: string;
  description?: string;
  author?: string;
}

export const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function readCommon(r: FieldReader, raw: JsonObject): CommonMembers {
  const out: CommonMembers = {};
  out.$schema = r.string('$schema', raw.$schema, { min: 1, max: 2048 });
  out.name = readPackageId(r, 'name', raw.name, true);
  const version = r.string('version', raw.version, { required: true });
  if (version !== undefined) {
    if (isExactVersion(version)) out.version = version;
    else r.fail('version', 'invalid_format', 'must be a semver version such as 1.0.0');
  }
  if (raw.type === undefined) {
    // the type picks the manifest's shape: a missing discriminator is invalid_union
    r.fail('type', 'invalid_union', `is required: one of ${PACKAGE_TYPES.join(', ')}`);
  } else {
    out.type = r.oneOf('type', raw.type, PACKAGE_TYPES);
  }
  if (raw.schema_version !== undefined) {
    if (raw.schema_version === SCHEMA_VERSION) out.schema_version = SCHEMA_VERSION;
    else r.fail('schema_version', 'invalid_value', `must be "${SCHEMA_VERSION}"`);
  }
  out.display_name = r.string('display_name', raw.display_name, { min: 1, max: 200 });
  out.description = r.string('description', raw.description, { max: 4000 });
  out.author = r.string('author', raw.author, { min: 1, max: 200 });
  return out;
}

export function readPackageId(r: FieldReader, field: string, value: unknown, required = false): string | undefined {
  const id = r.string(field, value, { required });
  if (id === undefined) return undefined;
  if (id.length > MAX_PACKAGE_ID_LENGTH) return r.fail(field, 'out_of_range', `must be at most ${MAX_PACKAGE_ID_LENGTH} characters`);
  const problem = packageIdProblem(id);
  return problem ? r.fail(field, 'invalid_format', problem) : id;
}

/** A map key that must be a package id. */
export function checkPackageIdKey(r: FieldReader, field: string, key: string): boolean {
  const problem = packageIdProblem(key);
  if (problem) r.fail(field, 'invalid_key', problem);
  return problem === null;
}

export function readVersionRange(r: FieldReader, field: string, value: unknown, required = false): string | undefined {
  const range = r.string(field, value, { required });
  if (range === undefined) return undefined;
  return isVersionRange(range) ? range : r.fail(field, 'invalid_format', 'must be a semver range such as ^1.0.0');
}

/** `{ schema: <JSON Schema object> }`, the shape of input, output and credentials. */
export function readSchemaHolder(r: FieldReader, field: string, value: unknown, required = false): { schema: JsonSchemaObject } | undefined {
  const holder = r.object(field, value, ['schema'], { required });
  if (!holder) return undefined;
  const schema = readJsonSchema(r, `${field}.schema`, holder.schema, true);
  return schema ? { schema } : undefined;
}

export function readJsonSchema(r: FieldReader, field: string, value: unknown, required = false): JsonSchemaObject | undefined {
  if (value === undefined) return required ? r.fail(field, 'required', 'is required') : undefined;
  if (!isJsonObject(value)) return r.fail(field, 'invalid_type', 'must be a JSON Schema object');
  const problem = jsonSchemaProblem(value);
  return problem ? r.fail(field, 'invalid_value', problem) : value;
}

export function readToolNames(r: FieldReader, field: string, value: unknown, required = false): string[] | undefined {
  return r.stringList(field, value, {
    required,
    element: (path, name) => TOOL_NAME.test(name)
      || (r.fail(path, 'invalid_format', 'must be a tool name of letters, digits, "_", "." and "-"'), false),
  });
}

/** A map of environment variables: NAME → string. */
export function readEnv(r: FieldReader, field: string, value: unknown): Record<string, string> | undefined {
  const entries = r.map(field, value);
  if (!entries) return undefined;
  const env: Record<string, string> = {};
  let ok = true;
  for (const [key, item, path] of entries) {
    if (!ENV_NAME.test(key)) {
      ok = false;
      r.fail(path, 'invalid_key', 'must be an environment variable name');
    } else if (r.string(path, item) === undefined) {
      ok = false;
    } else {
      env[key] = item as string;
    }
  }
  return ok ? env : undefined;
}
