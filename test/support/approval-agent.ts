// A tool call that needs a person's approval, for tests of the clients (dashboard, CLI) against a
// started platform: a loopback MCP server (the upstream, counting its calls), the integration
// naming it (no credential needed), and agents of the scripted model whose forecast calls are gated
// (or not: one whose model fails after its completed forecast, for resuming).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { readBody } from '../../lib/outbound-http.ts';
import { writeZip } from '../../lib/zip/write-zip.ts';
import { importPackage } from './runs.ts';

export const GATED_TOOL = 'public_weather__forecast';

export interface WeatherUpstream {
  /** the MCP endpoint's base URL (http://127.0.0.1:port) */
  url: string;
  host: string;
  /** the cities the forecast tool was called with, in order */
  calls: string[];
  /** called with each city as the tool answers (a test starts a model outage there, after a completed step) */
  onCall?: (city: string) => void;
  close(): Promise<void>;
}

/** The upstream: an MCP server whose forecast tool answers "Sunny in <city>". */
export async function startWeatherUpstream(): Promise<WeatherUpstream> {
  const calls: string[] = [];
  const server: Server = createServer(async (req, res) => {
    const mcp = new McpServer({ name: 'weather', version: '1.0.0' });
    mcp.registerTool('forecast', { description: 'the forecast of a city', inputSchema: { city: z.string() } }, ({ city }) => {
      calls.push(city);
      upstream.onCall?.(city);
      return { content: [{ type: 'text', text: `Sunny in ${city}` }] };
    });
    const raw = (await readBody(req)).toString('utf8');
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close());
    await mcp.connect(transport);
    await transport.handleRequest(req, res, raw === '' ? undefined : JSON.parse(raw));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const upstream: WeatherUpstream = {
    url, host: new URL(url).host, calls,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return upstream;
}

const zipOf = (manifest: Record<string, unknown>, files: Record<string, string> = {}) =>
  writeZip(new Map<string, Buffer>([['manifest.json', Buffer.from(JSON.stringify(manifest))], ...Object.entries(files).map(([p, c]) => [p, Buffer.from(c)] as [string, Buffer])]));

/** Imports the @public/weather integration pointing at the upstream. */
export async function importWeatherIntegration(base: string, key: string, upstream: WeatherUpstream): Promise<void> {
  await importPackage(base, key, zipOf({
    name: '@public/weather', version: '1.0.0', type: 'integration', schema_version: '0.3',
    source: { kind: 'remote', url: `${upstream.url}/mcp`, transport: 'streamable-http' }, default_tools: ['forecast'],
  }));
}

/**
 * An agent (for the scripted model) that asks the forecast of `city`, a call needing approval unless
 * `gated` is false, then outputs what it was answered ({ forecast }: the forecast, or the refusal
 * with its reason).
 */
export async function importForecastAgent(base: string, key: string, name: string, city: string, gated = true): Promise<void> {
  const script = [{ tool: GATED_TOOL, arguments: { city } }, { tool: 'output', arguments: { forecast: '{{result:0}}' } }];
  await importPackage(base, key, zipOf({
    name, version: '1.0.0', type: 'agent', schema_version: '0.3',
    dependencies: { integrations: { '@public/weather': '*' } },
    integrations_configuration: { '@public/weather': { tools: ['forecast'] } },
    runtime_tools: ['output'],
    output: { schema: { type: 'object', properties: { forecast: { type: 'string' } }, required: ['forecast'] } },
    ...(gated ? { approvals: { tools: [GATED_TOOL] } } : {}),
  }, { 'prompt.md': `Tell the forecast.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n` }));
}
