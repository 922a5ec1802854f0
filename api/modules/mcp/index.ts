// The mcp module: the API as an MCP server, one endpoint per organization (/api/mcp/o/{org}), an
// OAuth-protected resource whose tools search, describe and invoke the API's own operations.
import type { ApiModule } from '../../app.ts';
import type { AppDeps } from '../../deps.ts';
import { mcpMethodGuard, mcpRoutes } from './routes.ts';

export async function loadMcp(deps: AppDeps): Promise<ApiModule> {
  return { name: 'mcp', routes: mcpRoutes(deps), handler: () => mcpMethodGuard() };
}
