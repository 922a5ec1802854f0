// Members of an mcp-server manifest: the stdio MCP server the package holds and how to start it.
import { withoutUndefined, type FieldReader, type JsonObject } from './field-reader.ts';
import { readEnv } from './manifest-common.ts';
import type { McpServerManifest } from './manifest-types.ts';

export const MCP_SERVER_KEYS = ['server'] as const;

export function readMcpServerMembers(r: FieldReader, raw: JsonObject): Partial<Pick<McpServerManifest, 'server'>> {
  const server = r.object('server', raw.server, ['command', 'env'], { required: true });
  if (!server) return {};
  const command = r.stringList('server.command', server.command, {
    required: true,
    min: 1,
    repeats: true,
    element: (path, arg) => arg.length > 0 || (r.fail(path, 'out_of_range', 'must not be empty'), false),
  });
  const env = readEnv(r, 'server.env', server.env);
  return command ? { server: withoutUndefined({ command, env }) } : {};
}
