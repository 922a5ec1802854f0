// Members of an integration manifest: where its tools come from and how it authenticates.
import { isJsonObject, withoutUndefined, type FieldReader, type JsonObject } from './field-reader.ts';
import { readAuth, readHttpUrl, type NamedHost } from './integration-auth.ts';
import { readEnv, readPackageId, readToolNames, readVersionRange } from './manifest-common.ts';
import type { IntegrationAuth, IntegrationManifest, IntegrationSource } from './manifest-types.ts';

export const INTEGRATION_KEYS = ['source', 'default_tools', 'auths'] as const;

const AUTH_KEY = /^[a-z][a-z0-9_-]{0,63}$/;
const IMAGE_REFERENCE = /^[a-z0-9][a-z0-9._\/:@-]{0,254}$/i;
const SOURCE_KINDS = ['none', 'local', 'remote'] as const;

type IntegrationMembers = Partial<Pick<IntegrationManifest, 'source' | 'default_tools' | 'auths'>>;

export function readIntegrationMembers(r: FieldReader, raw: JsonObject): IntegrationMembers {
  const out: IntegrationMembers = {};
  out.source = readSource(r, 'source', raw.source);
  out.default_tools = readToolNames(r, 'default_tools', raw.default_tools);

  const entries = r.map('auths', raw.auths);
  if (entries) {
    const auths: Record<string, IntegrationAuth> = {};
    const hosts: NamedHost[] = [];
    let withConnect = false;
    for (const [key, value, path] of entries) {
      if (!AUTH_KEY.test(key)) {
        r.fail(path, 'invalid_key', 'must be lower case letters, digits, "_" or "-", starting with a letter');
        continue;
      }
      const read = readAuth(r, path, value);
      if (read.auth) auths[key] = read.auth;
      hosts.push(...read.hosts);
      withConnect ||= read.connect;
    }
    // A login stores a session for one host; every credential of such an integration goes there.
    if (withConnect) checkOneHost(r, hosts);
    out.auths = auths;
  }
  return withoutUndefined(out);
}

function checkOneHost(r: FieldReader, hosts: NamedHost[]): void {
  const first = hosts[0];
  for (const other of hosts.slice(1)) {
    if (other.host !== first.host) {
      r.fail(other.field, 'invalid_value', `names host ${other.host}, but an integration with a login serves one host (${first.host})`);
    }
  }
}

function readSource(r: FieldReader, field: string, value: unknown): IntegrationSource | undefined {
  if (value === undefined) return r.fail(field, 'required', 'is required');
  if (!isJsonObject(value)) return r.fail(field, 'invalid_type', 'must be an object');
  const kindField = `${field}.kind`;
  if (value.kind === undefined) {
    r.onlyKeys(field, value, ['kind', 'url', 'transport', 'server', 'command', 'image', 'env']);
    return r.fail(kindField, 'invalid_union', `is required: one of ${SOURCE_KINDS.join(', ')}`);
  }
  const kind = r.oneOf(kindField, value.kind, SOURCE_KINDS);

  if (kind === 'none') {
    r.onlyKeys(field, value, ['kind']);
    return { kind };
  }
  if (kind === 'remote') {
    r.onlyKeys(field, value, ['kind', 'url', 'transport']);
    const url = readHttpUrl(r, `${field}.url`, value.url, true);
    const transport = r.oneOf(`${field}.transport`, value.transport, ['streamable-http', 'sse'] as const, { required: true });
    return url !== undefined && transport ? { kind, url, transport } : undefined;
  }
  if (kind === 'local') {
    r.onlyKeys(field, value, ['kind', 'server', 'command', 'image', 'env']);
    const env = readEnv(r, `${field}.env`, value.env);
    if (value.server !== undefined && (value.command !== undefined || value.image !== undefined)) {
      return r.fail(field, 'invalid_value', 'names either server (an mcp-server package) or command (with an optional image), not both');
    }
    if (value.server !== undefined) {
      const server = r.object(`${field}.server`, value.server, ['name', 'version']);
      if (!server) return undefined;
      const name = readPackageId(r, `${field}.server.name`, server.name, true);
      const version = readVersionRange(r, `${field}.server.version`, server.version, true);
      return name && version ? withoutUndefined({ kind, server: { name, version }, env }) : undefined;
    }
    if (value.command === undefined) {
      return r.fail(field, 'invalid_value', 'a local source needs server (an mcp-server package) or command');
    }
    const command = r.stringList(`${field}.command`, value.command, {
      min: 1,
      repeats: true,
      element: (path, arg) => arg.length > 0 || (r.fail(path, 'out_of_range', 'must not be empty'), false),
    });
    const image = r.string(`${field}.image`, value.image, { pattern: IMAGE_REFERENCE, format: 'a container image reference' });
    return command ? withoutUndefined({ kind, command, image, env }) : undefined;
  }
  return undefined;
}
