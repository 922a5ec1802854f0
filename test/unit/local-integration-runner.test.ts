// What a local integration's runner is made of, checked without an engine: the images the operator
// allows, the sidecar's reading of its local integrations (fields named, never the token), and the
// server container's create options (confined, on the run's MCP network only, package read-only).
import { describe, test } from 'node:test';
import { LOCAL_EGRESS_PROXY_PORT, localEgressEnv } from '../../lib/afps/integration-assignment.ts';
import assert from 'node:assert/strict';
import { MCP_BRIDGE_PORT, mcpServerContainerSpec, names } from '../../activities/sandbox/docker-specs.ts';
import { loadConfig } from '../../lib/config.ts';
import { allowedLocalImages, DEFAULT_AGENT_IMAGE, refusedLocalImage } from '../../lib/local-integration-images.ts';
import { parseAssignment } from '../../sidecar/assignment.ts';

const TOKEN = 'T'.repeat(43);
const local = (image?: string) => ({ kind: 'local' as const, command: ['node', 'server.js'], ...(image ? { image } : {}) });

describe('the images a local integration may name', () => {
  test('by default the agent image only; a server naming no image runs there', () => {
    const config = { LOCAL_INTEGRATION_IMAGES: [] };
    assert.deepEqual(allowedLocalImages(config), [DEFAULT_AGENT_IMAGE]);
    assert.equal(refusedLocalImage(local(), config), null);
    assert.equal(refusedLocalImage(local(DEFAULT_AGENT_IMAGE), config), null);
    assert.equal(refusedLocalImage(local('alpine:3'), config), 'alpine:3');
    assert.equal(refusedLocalImage({ kind: 'none' }, config), null);
  });

  test('LOCAL_INTEGRATION_IMAGES lists them exactly; DOCKER_AGENT_IMAGE names the agent image', () => {
    const config = loadConfig({ LOCAL_INTEGRATION_IMAGES: 'ops/mcp-python:1, ops/mcp-node:2', DOCKER_AGENT_IMAGE: 'ops/agent:3', DOCKER_SIDECAR_IMAGE: 'ops/sidecar:3' });
    assert.deepEqual(config.LOCAL_INTEGRATION_IMAGES, ['ops/mcp-python:1', 'ops/mcp-node:2']);
    assert.equal(refusedLocalImage(local('ops/mcp-node:2'), config), null);
    assert.equal(refusedLocalImage(local('ops/agent:3'), config), null);
    assert.equal(refusedLocalImage(local('ops/mcp-node:20'), config), 'ops/mcp-node:20');
    assert.equal(refusedLocalImage(local(DEFAULT_AGENT_IMAGE), config), DEFAULT_AGENT_IMAGE, 'the default agent image is not the configured one');
  });
});

describe("the sidecar's local integrations", () => {
  const line = (localIntegrations: unknown) => JSON.stringify({
    runId: 'run_1', eventsUrl: 'http://127.0.0.1:1/e', eventSecret: 'whsec_0123456789', token: TOKEN, model: null, outputSchema: null,
    runtimeTools: [], heartbeatSeconds: 5, localIntegrations,
  });
  const entry = { packageId: '@acme/files', toolPrefix: 'acme_files', tools: ['read', 'read'], bridge: { host: '172.31.0.2', port: MCP_BRIDGE_PORT, token: TOKEN } };

  test('are read with their bridge; absent, there are none', () => {
    assert.deepEqual(parseAssignment(line([entry])).localIntegrations, [{ ...entry, tools: ['read'] }]);
    assert.deepEqual(parseAssignment(line(undefined)).localIntegrations, []);
  });

  test('a short token, no tools, or no bridge is refused naming the field, never the value', () => {
    const short = 'short-token-value';
    assert.throws(() => parseAssignment(line([{ ...entry, bridge: { ...entry.bridge, token: short } }])), (err: Error) =>
      /localIntegrations\[0\]\.bridge\.token/.test(err.message) && !err.message.includes(short));
    assert.throws(() => parseAssignment(line([{ ...entry, tools: [] }])), /localIntegrations\[0\]\.tools/);
    assert.throws(() => parseAssignment(line([{ ...entry, bridge: undefined }])), /localIntegrations\[0\]\.bridge\.host/);
    assert.throws(() => parseAssignment(line([{ ...entry, bridge: { ...entry.bridge, port: 70000 } }])), /localIntegrations\[0\]\.bridge\.port/);
  });

  test("its egress grant is read with the server's proxy secret; a short secret or a non-list of URIs is refused, never echoed", () => {
    const egress = { secret: TOKEN, authorizedUris: ['https://api.vendor.test/*'] };
    assert.deepEqual(parseAssignment(line([{ ...entry, egress }])).localIntegrations[0].egress, egress);
    const short = 'short-secret-value';
    assert.throws(() => parseAssignment(line([{ ...entry, egress: { ...egress, secret: short } }])), (err: Error) =>
      /localIntegrations\[0\]\.egress\.secret/.test(err.message) && !err.message.includes(short));
    assert.throws(() => parseAssignment(line([{ ...entry, egress: { ...egress, authorizedUris: 'https://x/*' } }])), /localIntegrations\[0\]\.egress\.authorizedUris/);
  });

  test('the proxy variables name the sidecar with the secret, and leave nothing to bypass it', () => {
    const env = localEgressEnv('sidecar', TOKEN);
    const url = `http://mcp:${TOKEN}@sidecar:${LOCAL_EGRESS_PROXY_PORT}`;
    assert.deepEqual(env, { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: '', no_proxy: '' });
  });
});

describe("a local server's container", () => {
  const spec = (serverDir: string | null) => mcpServerContainerSpec({
    sandboxId: 'sbx_abcdefghijklmnopqrst', runId: 'run_1', index: 0, image: 'agent-platform/agent:p3', packageId: '@acme/files',
    serverDir, bridge: { token: TOKEN, command: ['node', 'server.js'], env: { GREETING: 'hi' } }, limits: { memoryMb: 512, cpus: 1 },
  });

  test('is confined like the agent and sits on the run MCP network only', () => {
    const c = spec('/data/sbx/servers/0');
    const n = names('sbx_abcdefghijklmnopqrst');
    assert.equal(c.User, '10001:10001');
    assert.equal(c.HostConfig?.ReadonlyRootfs, true);
    assert.deepEqual(c.HostConfig?.CapDrop, ['ALL']);
    assert.deepEqual(c.HostConfig?.SecurityOpt, ['no-new-privileges']);
    assert.equal(c.HostConfig?.NetworkMode, n.mcpNetwork);
    assert.equal(c.HostConfig?.Memory, 512 * 1024 * 1024);
    assert.equal(c.HostConfig?.PidsLimit, 128);
    assert.deepEqual(c.HostConfig?.Binds, ['/data/sbx/servers/0:/server:ro']);
    assert.equal(c.WorkingDir, '/server');
    assert.equal(c.OpenStdin, undefined);
    assert.ok(n.mcpBridge.length <= 15 && n.mcpBridge !== n.bridge, 'an interface name of its own');
  });

  test('hands the bridge its token, port, argv and env in one variable; a command in an image runs from /tmp with nothing bound', () => {
    const c = spec(null);
    assert.deepEqual(c.Entrypoint, ['/usr/bin/node']);
    assert.deepEqual(c.Cmd, ['/app/mcp-bridge.cjs']);
    const config = JSON.parse(c.Env!.find((e) => e.startsWith('MCP_BRIDGE_CONFIG='))!.slice('MCP_BRIDGE_CONFIG='.length));
    assert.deepEqual(config, { token: TOKEN, port: MCP_BRIDGE_PORT, command: ['node', 'server.js'], cwd: '/tmp', env: { GREETING: 'hi' } });
    assert.deepEqual(c.Env!.filter((e) => !e.startsWith('MCP_BRIDGE_CONFIG=')), ['HOME=/tmp', 'PATH=/usr/bin']);
    assert.deepEqual(c.HostConfig?.Binds, []);
  });
});
