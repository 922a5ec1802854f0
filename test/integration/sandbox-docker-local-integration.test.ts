// RUN_ADAPTER=docker at the adapter, local integrations (source.kind local): each server runs in a
// container of its own, confined like the agent, on a second internal network whose only other
// member is the sidecar. The agent cannot reach it, the server reaches neither the agent nor the
// host, a connection to its bridge without the token is closed, and every part goes with the
// sandbox (stop, or the next adapter's, as its reaper would). A run calling the tool through the
// whole platform: local-integration-docker-run.test.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import type { LocalServerSpec, SandboxSpec } from '../../activities/sandbox/adapter.ts';
import { createDockerAdapter, LABEL_ROLE, LABEL_RUN, LABEL_SANDBOX, type DockerSandboxAdapter } from '../../activities/sandbox/docker-adapter.ts';
import { LABEL_INTEGRATION, MCP_BRIDGE_PORT } from '../../activities/sandbox/docker-specs.ts';
import { type FakeModel } from '../fixtures/fake-model/server.ts';
import { aDockerWorld, execNode, probeScript, type DockerWorld } from './sandbox-docker-harness.ts';
import { AGENT_IMAGE, DOCKER_REQUIRED, dockerForTests, SIDECAR_IMAGE } from '../support/docker.ts';
import { waitUntil, type EventReceiver } from './sidecar-run-harness.ts';
import { aSandboxSpec, MODEL_KEY } from './sandbox-process-harness.ts';
import { aSelfSignedCert } from '../support/self-signed.ts';

const unavailable = await dockerForTests();
const SERVER = readFileSync(new URL('../fixtures/local-mcp-server/server.cjs', import.meta.url));

function aLocalServer(overrides: Partial<LocalServerSpec> = {}): LocalServerSpec {
  return {
    packageId: '@acme/local-echo', toolPrefix: 'acme_local-echo', tools: ['echo', 'environment', 'connect', 'fetch'],
    command: ['node', 'server.cjs'], image: null, env: { GREETING: 'hello' }, files: [{ path: 'server.cjs', content: SERVER }],
    ...overrides,
  };
}

/** node source that presents `token` to a bridge, asks for its tools, and prints what came back before the bridge closed */
const bridgeScript = (target: string, token: string) => `
const net = require('net');
const i = ${JSON.stringify(target)}.lastIndexOf(':');
const s = net.connect({ host: ${JSON.stringify(target)}.slice(0, i), port: Number(${JSON.stringify(target)}.slice(i + 1)) });
let data = '';
const done = (closed) => { console.log(JSON.stringify({ data, closed })); process.exit(0); };
s.on('connect', () => s.write(JSON.stringify({ token: ${JSON.stringify(token)} }) + '\\n' + JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) + '\\n'));
s.on('data', (c) => (data += c));
s.on('close', () => done(true));
s.on('error', () => undefined);
setTimeout(() => done(false), 3000);`;

async function mcpContainersOf(docker: Docker, sandboxId: string) {
  return docker.listContainers({ all: true, filters: { label: [`${LABEL_SANDBOX}=${sandboxId}`, `${LABEL_ROLE}=mcp`] } });
}

describe('local integrations on the docker backend', { skip: unavailable ?? false }, () => {
  let world: DockerWorld;
  let model: FakeModel;
  let receiver: EventReceiver;
  let adapter: DockerSandboxAdapter;
  let hostPort: number;
  let secret: string;
  /** a run that stays up (its model never answers), with the given local servers */
  const hanging = (runId: string, servers: LocalServerSpec[]): SandboxSpec => {
    const spec = aSandboxSpec({ runId, eventsBaseUrl: receiver.url, secret, modelUrl: model.url, memoryMb: 256 });
    spec.sidecar.model = { ...spec.sidecar.model!, model: 'fake-hang' };
    spec.limits.cpus = 1;
    return { ...spec, localServers: servers };
  };

  before(async () => {
    world = await aDockerWorld('sbx-docker-local-');
    ({ model, receiver, adapter, hostPort, secret } = world);
  });
  after(() => world?.close());

  test("the server is confined on the sidecar's second network: the agent cannot reach it, it reaches neither the agent nor the host, its bridge wants the token; stop removes it all", async () => {
    const { sandboxId } = await adapter.start(hanging('run_docker_local_net', [aLocalServer()]));
    const names = adapter.containers(sandboxId);
    const docker = adapter.docker;
    try {
      const [found] = await mcpContainersOf(docker, sandboxId);
      assert.ok(found, 'a container runs the local server');
      const mcp = await docker.getContainer(found.Id).inspect();
      assert.equal(mcp.State.Running, true);
      assert.equal(mcp.Config.User, '10001:10001');
      assert.equal(mcp.HostConfig.ReadonlyRootfs, true);
      assert.deepEqual(mcp.HostConfig.CapDrop, ['ALL']);
      assert.ok(mcp.HostConfig.SecurityOpt?.includes('no-new-privileges'));
      assert.equal(mcp.HostConfig.PidsLimit, 128);
      assert.equal(mcp.HostConfig.Memory, 256 * 1024 * 1024);
      assert.equal(mcp.Config.Labels[LABEL_RUN], 'run_docker_local_net');
      assert.equal(mcp.Config.Labels[LABEL_INTEGRATION], '@acme/local-echo');
      assert.equal(mcp.Config.Image, AGENT_IMAGE);
      for (const value of mcp.Config.Env ?? []) assert.ok(!value.includes('whsec_') && !value.includes(MODEL_KEY), value);
      assert.deepEqual(Object.keys(mcp.NetworkSettings.Networks), [names.mcpNetwork]);

      const mcpNetwork = await docker.getNetwork(names.mcpNetwork).inspect();
      assert.equal(mcpNetwork.Internal, true);
      assert.equal(mcpNetwork.Labels?.[LABEL_SANDBOX], sandboxId);
      const agent = await docker.getContainer(names.agent).inspect();
      const sidecar = await docker.getContainer(names.sidecar).inspect();
      const members = Object.keys(mcpNetwork.Containers ?? {}).sort();
      assert.deepEqual(members, [mcp.Id, sidecar.Id].sort(), 'the sidecar and the server only');
      assert.deepEqual(Object.keys(agent.NetworkSettings.Networks), [names.network], 'the agent is on its run network only');

      const ipOn = (c: typeof mcp, network: string) => (c.NetworkSettings.Networks as Record<string, { IPAddress: string }>)[network].IPAddress;
      const bridge = `${ipOn(mcp, names.mcpNetwork)}:${MCP_BRIDGE_PORT}`;
      const mcpGateway = mcpNetwork.IPAM?.Config?.[0]?.Gateway as string;

      const fromSidecar = await execNode(docker, names.sidecar, probeScript([bridge]));
      assert.equal(fromSidecar[bridge], 'connected', 'the sidecar reaches the bridge');
      const fromAgent = await execNode(docker, names.agent, probeScript([bridge, `${mcpGateway}:${hostPort}`]));
      for (const [target, result] of Object.entries(fromAgent)) assert.notEqual(result, 'connected', `the agent reached ${target}`);
      const agentIp = ipOn(agent, names.network);
      const fromServer = await execNode(docker, found.Id, probeScript([
        `${agentIp}:${MCP_BRIDGE_PORT}`, `${ipOn(sidecar, names.network)}:${MCP_BRIDGE_PORT}`, `${mcpGateway}:${hostPort}`, `${adapter.gateway}:${hostPort}`,
      ]));
      for (const [target, result] of Object.entries(fromServer)) assert.notEqual(result, 'connected', `the server reached ${target}`);

      // on the server's network, without its token: closed before a word reaches the server
      const intruder = await execNode(docker, names.sidecar, bridgeScript(bridge, 'x'.repeat(43)));
      assert.deepEqual(intruder, { data: '', closed: true });
    } finally {
      await adapter.stop(sandboxId);
    }
    assert.deepEqual(await mcpContainersOf(docker, sandboxId), []);
    await assert.rejects(docker.getNetwork(names.mcpNetwork).inspect(), /404|not found/i);
    assert.doesNotMatch(execFileSync('iptables', ['-S', 'INPUT'], { encoding: 'utf8' }), new RegExp(`apm${sandboxId.slice(4, 16)}`));
  });

  test('a run calls the local tool and gets its answer; the server sees the manifest env, its package folder and the sandbox user', async () => {
    const script = [
      { tool: 'acme_local-echo__echo', arguments: { text: 'ping' } },
      { tool: 'acme_local-echo__environment', arguments: {} },
      { tool: 'log', arguments: { level: 'info', message: '{{result:1}}' } },
      { tool: 'output', arguments: { summary: '{{result:0}}', count: 1 } },
    ];
    const base = aSandboxSpec({ runId: 'run_docker_local_call', eventsBaseUrl: receiver.url, secret, modelUrl: model.url, memoryMb: 256 });
    base.sidecar.model = { ...base.sidecar.model!, model: 'fake-script' };
    base.workspace[0] = { path: 'prompt.md', content: Buffer.from(`Use the tools.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n`) };
    const { sandboxId } = await adapter.start({ ...base, localServers: [aLocalServer()] });
    try {
      const events = () => receiver.deliveries.filter((d) => d.path.includes('/runs/run_docker_local_call/') && d.status < 300).flatMap((d) => d.events ?? []);
      await waitUntil(() => events().some((e) => e.type === 'completed' || e.type === 'failed'), 60_000);
      const output = events().find((e) => e.type === 'output');
      assert.deepEqual(output?.type === 'output' && output.data.output, { summary: 'hello: ping', count: 1 });
      const logged = events().find((e) => e.type === 'log' && String(e.data.message).includes('"env"'));
      const seen = JSON.parse(String(logged?.type === 'log' && logged.data.message));
      assert.deepEqual(Object.keys(seen.env).sort(), ['GREETING', 'HOME', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'PATH', 'http_proxy', 'https_proxy', 'no_proxy'],
        'the manifest env and the proxy variables, no bridge configuration, no platform secret');
      assert.match(seen.env.HTTPS_PROXY, /^http:\/\/mcp:[A-Za-z0-9_-]{43}@sidecar:3128$/);
      assert.equal(seen.env.NO_PROXY, '');
      assert.equal(seen.cwd, '/server');
      assert.equal(seen.uid, 10001);
      assert.ok(events().some((e) => e.type === 'completed'));
    } finally {
      await adapter.stop(sandboxId);
    }
  });

  test("the server reaches its vendor over HTTP and HTTPS through the sidecar's proxy, and nothing else: another host, loopback, private addresses and the platform's ports are refused", async () => {
    // the fake vendor: a container on a network of its own, named vendor.test there, which the
    // sidecar joins (as it would reach a vendor on the internet); HTTP on 8080, HTTPS on 8443
    const docker = adapter.docker;
    const vendorNet = `apt-vendor-${Date.now().toString(36)}`;
    const cert = aSelfSignedCert('vendor.test');
    const vendorScript = `const http = require('http'), https = require('https');
const h = (tag) => (req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify({ vendor: tag, path: req.url, auth: req.headers['proxy-authorization'] || null })); };
http.createServer(h('http')).listen(8080, () => https.createServer({ key: process.env.KEY, cert: process.env.CERT }, h('https')).listen(8443, () => console.log('ready')));`;
    await docker.createNetwork({ Name: vendorNet, Internal: true, Labels: { 'agent-platform.test': 'vendor' } });
    const vendor = await docker.createContainer({
      Image: AGENT_IMAGE, Entrypoint: ['/usr/bin/node'], Cmd: ['-e', vendorScript], User: '10001:10001', Env: [`KEY=${cert.key}`, `CERT=${cert.cert}`],
      HostConfig: { NetworkMode: vendorNet }, NetworkingConfig: { EndpointsConfig: { [vendorNet]: { Aliases: ['vendor.test'] } } },
    });
    let sandboxId: string | undefined;
    try {
      await vendor.start();
      for (let i = 0; !String(await vendor.logs({ stdout: true, stderr: true })).includes('ready'); i++) {
        if (i > 150) throw new Error('the vendor did not start');
        await new Promise((r) => setTimeout(r, 100));
      }
      const vendorIp = ((await vendor.inspect()).NetworkSettings.Networks as Record<string, { IPAddress: string }>)[vendorNet].IPAddress;

      const urls = [
        'http://vendor.test:8080/api/items', 'https://vendor.test:8443/v1/me',
        'http://vendor.test:9999/api/items', 'http://127.0.0.1:8080/api/items', 'http://10.1.2.3/x', 'http://127.0.0.1:3128/x',
      ];
      const script = [
        { tool: 'acme_local-echo__fetch', arguments: { urls } },
        { tool: 'acme_local-echo__connect', arguments: { host: vendorIp, port: 8080 } },
        { tool: 'log', arguments: { level: 'info', message: 'fetched {{result:0}}' } },
        { tool: 'log', arguments: { level: 'info', message: 'direct {{result:1}}' } },
        { tool: 'output', arguments: { summary: 'done', count: 1 } },
      ];
      const runId = 'run_docker_local_egress';
      const base = aSandboxSpec({ runId, eventsBaseUrl: receiver.url, secret, modelUrl: model.url, memoryMb: 256 });
      base.sidecar.model = { ...base.sidecar.model!, model: 'fake-script' };
      // the operator allows the vendor's internal name on its ports, and (to show the platform's ports hold even then) the proxy's own
      base.sidecar.egressAllowInternalHosts = [...(base.sidecar.egressAllowInternalHosts ?? []), 'vendor.test:8080', 'vendor.test:8443', '127.0.0.1:3128'];
      base.workspace[0] = { path: 'prompt.md', content: Buffer.from(`Use the tools.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n`) };
      const server = aLocalServer({
        env: { GREETING: 'hello', NODE_EXTRA_CA_CERTS: '/server/vendor-ca.pem' },
        files: [{ path: 'server.cjs', content: SERVER }, { path: 'vendor-ca.pem', content: Buffer.from(cert.cert) }],
        authorizedUris: ['http://vendor.test:8080/api/*', 'https://vendor.test:8443/*', 'http://127.0.0.1:8080/*', 'http://10.1.2.3/*', 'http://127.0.0.1:3128/*'],
      });
      // the first model answer waits while the sidecar joins the vendor's network
      model.setLatency(3000);
      try {
        ({ sandboxId } = await adapter.start({ ...base, localServers: [server] }));
        await docker.getNetwork(vendorNet).connect({ Container: adapter.containers(sandboxId).sidecar });
      } finally {
        model.setLatency(0);
      }
      const events = () => world.eventsOf(runId);
      await waitUntil(() => events().some((e) => e.type === 'completed' || e.type === 'failed'), 60_000);
      const logged = (prefix: string) => {
        const e = events().find((x) => x.type === 'log' && String(x.data.message).startsWith(prefix));
        assert.ok(e && e.type === 'log', `a log line ${prefix}`);
        return String(e.data.message).slice(prefix.length);
      };
      const results = JSON.parse(logged('fetched ')) as Array<{ status: number; body: string }>;
      assert.deepEqual(results[0], { status: 200, body: JSON.stringify({ vendor: 'http', path: '/api/items', auth: null }), sent: { host: 'vendor.test:8080' } }, 'plain HTTP reaches the vendor');
      assert.deepEqual(results[1], { status: 200, body: JSON.stringify({ vendor: 'https', path: '/v1/me', auth: null }), sent: { host: 'vendor.test:8443' } }, 'HTTPS through CONNECT, the vendor\'s certificate trusted');
      assert.equal(results[2].status, 403);
      assert.match(results[2].body, /^unauthorized_target/, 'a port no authorized_uris entry names');
      assert.equal(results[3].status, 403);
      assert.match(results[3].body, /^blocked_target: .*loopback/);
      assert.equal(results[4].status, 403);
      assert.match(results[4].body, /^blocked_target: .*private/);
      assert.equal(results[5].status, 403);
      assert.match(results[5].body, /platform's own endpoints/);
      assert.notEqual(logged('direct '), 'connected', 'the server has no route of its own to the vendor');
      assert.ok(events().some((e) => e.type === 'completed'));

      // the proxy secret is the server's: it is in no event of the run
      const [mcp] = await mcpContainersOf(docker, sandboxId!);
      const config = (await docker.getContainer(mcp.Id).inspect()).Config.Env.find((v) => v.startsWith('MCP_BRIDGE_CONFIG='))!;
      const proxySecret = /mcp:([A-Za-z0-9_-]{43})@/.exec(config)![1];
      assert.ok(!JSON.stringify(events()).includes(proxySecret));
    } finally {
      if (sandboxId) await adapter.stop(sandboxId);
      await vendor.remove({ force: true }).catch(() => undefined);
      await docker.getNetwork(vendorNet).remove().catch(() => undefined);
    }
  });

  test("delivery.http: the sidecar puts the credential on the server's requests; the server never holds it, trusts the run's authority, and the vendor's certificate is verified by the sidecar", async () => {
    const docker = adapter.docker;
    const vendorNet = `apt-vendor-${Date.now().toString(36)}`;
    const TOKEN = 'tok_docker_live_5e8a1c3b9d7f2a4e';
    // the vendor answers whether the credential came, never the credential
    const vendorScript = `const http = require('http');
http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify({ path: req.url, credential: req.headers.authorization === 'Bearer ${TOKEN}' ? 'live' : req.headers.authorization ? 'other' : 'none' })); }).listen(8080, () => console.log('ready'));
const https = require('https'); https.createServer({ key: process.env.KEY, cert: process.env.CERT }, (req, res) => res.end('{}')).listen(8443);`;
    const cert = aSelfSignedCert('vendor.test');
    await docker.createNetwork({ Name: vendorNet, Internal: true, Labels: { 'agent-platform.test': 'vendor' } });
    const vendor = await docker.createContainer({
      Image: AGENT_IMAGE, Entrypoint: ['/usr/bin/node'], Cmd: ['-e', vendorScript], User: '10001:10001', Env: [`KEY=${cert.key}`, `CERT=${cert.cert}`],
      HostConfig: { NetworkMode: vendorNet }, NetworkingConfig: { EndpointsConfig: { [vendorNet]: { Aliases: ['vendor.test'] } } },
    });
    let sandboxId: string | undefined;
    try {
      await vendor.start();
      for (let i = 0; !String(await vendor.logs({ stdout: true, stderr: true })).includes('ready'); i++) {
        if (i > 150) throw new Error('the vendor did not start');
        await new Promise((r) => setTimeout(r, 100));
      }
      const urls = ['http://vendor.test:8080/api/items', 'https://vendor.test:8443/v1/me', 'http://elsewhere.test:8080/api/items', 'http://127.0.0.1:3128/x'];
      const script = [
        { tool: 'acme_local-echo__fetch', arguments: { urls } },
        { tool: 'acme_local-echo__environment', arguments: {} },
        { tool: 'log', arguments: { level: 'info', message: 'fetched {{result:0}}' } },
        { tool: 'log', arguments: { level: 'info', message: 'environment {{result:1}}' } },
        { tool: 'output', arguments: { summary: 'done', count: 1 } },
      ];
      const runId = 'run_docker_local_inject';
      const base = aSandboxSpec({ runId, eventsBaseUrl: receiver.url, secret, modelUrl: model.url, memoryMb: 256 });
      base.sidecar.model = { ...base.sidecar.model!, model: 'fake-script' };
      base.sidecar.egressAllowInternalHosts = [...(base.sidecar.egressAllowInternalHosts ?? []), 'vendor.test:8080', 'vendor.test:8443', '127.0.0.1:3128'];
      const authorizedUris = ['http://vendor.test:8080/api/*', 'https://vendor.test:8443/*', 'http://127.0.0.1:3128/*'];
      base.sidecar.integrations = [{
        packageId: '@acme/local-echo', toolPrefix: 'acme_local-echo', tools: ['fetch'], source: { kind: 'local', command: ['node', 'server.cjs'] },
        authKey: 'main', authType: 'api_key', connectionId: 'conn_local', authorizedUris,
        delivery: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.access_token}' }, credentials: { access_token: TOKEN },
      }];
      base.workspace[0] = { path: 'prompt.md', content: Buffer.from(`Use the tools.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n`) };
      const server = aLocalServer({ authorizedUris, trustRunCa: true });
      model.setLatency(3000);
      try {
        ({ sandboxId } = await adapter.start({ ...base, localServers: [server] }));
        await docker.getNetwork(vendorNet).connect({ Container: adapter.containers(sandboxId).sidecar });
      } finally {
        model.setLatency(0);
      }
      const events = () => world.eventsOf(runId);
      await waitUntil(() => events().some((e) => e.type === 'completed' || e.type === 'failed'), 60_000);
      const logged = (prefix: string) => {
        const e = events().find((x) => x.type === 'log' && String(x.data.message).startsWith(prefix));
        assert.ok(e && e.type === 'log', `a log line ${prefix}`);
        return String(e.data.message).slice(prefix.length);
      };
      const results = JSON.parse(logged('fetched ')) as Array<{ status: number; body: string }>;
      assert.deepEqual(results[0], { status: 200, body: JSON.stringify({ path: '/api/items', credential: 'live' }), sent: { host: 'vendor.test:8080' } }, 'the credential injected on plain HTTP');
      // the server's TLS trusted the run's authority (its handshake with the sidecar succeeded); the
      // sidecar's own TLS to the vendor refused the vendor's self-signed certificate, which it does not trust
      assert.equal(results[1].status, 502, results[1].body);
      assert.match(results[1].body, /^upstream_unreachable/);
      assert.equal(results[2].status, 403);
      assert.match(results[2].body, /^unauthorized_target/);
      assert.equal(results[3].status, 403);
      assert.match(results[3].body, /platform's own endpoints/);
      const seen = JSON.parse(logged('environment ')) as { env: Record<string, string> };
      assert.equal(seen.env.NODE_EXTRA_CA_CERTS, '/tmp/agent-platform-trust/run-ca.pem');
      assert.equal(seen.env.SSL_CERT_FILE, '/tmp/agent-platform-trust/ca-bundle.pem');
      assert.ok(!JSON.stringify(seen.env).includes(TOKEN), "the credential is not in the server's environment");
      const [mcp] = await mcpContainersOf(docker, sandboxId!);
      const serverLog = String(await docker.getContainer(mcp.Id).logs({ stdout: true, stderr: true }));
      assert.ok(!serverLog.includes(TOKEN), "nor in what the server wrote");
      assert.ok(!JSON.stringify(events()).includes(TOKEN), "nor in the run's events");
      assert.ok(events().some((e) => e.type === 'completed'));
    } finally {
      if (sandboxId) await adapter.stop(sandboxId);
      await vendor.remove({ force: true }).catch(() => undefined);
      await docker.getNetwork(vendorNet).remove().catch(() => undefined);
    }
  });

  test('a pair with a local server is adopted by the next adapter, whose stop (the reaper) removes the server too', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sbx-docker-local-adopt-'));
    const first = await createDockerAdapter({ workDir: dir, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE });
    let second: DockerSandboxAdapter | undefined;
    try {
      const { sandboxId } = await first.start(hanging('run_docker_local_adopt', [aLocalServer()]));
      await first.close();
      assert.equal((await mcpContainersOf(first.docker, sandboxId))[0]?.State, 'running', 'the server outlives the adapter');
      second = await createDockerAdapter({ workDir: dir, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE });
      assert.ok(second.sandboxes().some((s) => s.sandboxId === sandboxId && s.runId === 'run_docker_local_adopt'));
      assert.equal(await second.state(sandboxId), 'running');
      await second.stop(sandboxId);
      assert.deepEqual(await mcpContainersOf(second.docker, sandboxId), []);
      await assert.rejects(second.docker.getNetwork(second.containers(sandboxId).mcpNetwork).inspect(), /404|not found/i);
    } finally {
      for (const s of second?.sandboxes() ?? []) if (s.runId === 'run_docker_local_adopt') await second!.stop(s.sandboxId);
      await second?.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a server naming an image the operator does not allow is refused before anything of the sandbox exists', async () => {
    const spec = hanging('run_docker_local_image', [aLocalServer({ image: 'agent-platform/not-allowed:1', files: null })]);
    await assert.rejects(adapter.start(spec), /agent-platform\/not-allowed:1.*LOCAL_INTEGRATION_IMAGES/);
    assert.ok(!adapter.sandboxes().some((s) => s.runId === 'run_docker_local_image'));
    assert.deepEqual(await adapter.docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=run_docker_local_image`] } }), []);
    assert.deepEqual(await adapter.docker.listNetworks({ filters: { label: [`${LABEL_RUN}=run_docker_local_image`] } }), []);
  });
});

test('the local integration docker tests run here when CI requires them', () => {
  if (DOCKER_REQUIRED) assert.equal(unavailable, null);
  else if (unavailable) assert.match(unavailable, /docker/);
});
