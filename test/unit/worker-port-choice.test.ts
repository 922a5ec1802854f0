// The workflow endpoint's port: one the first start chose and another process bound before the
// endpoint did is chosen again (and kept); a port kept from an earlier start, or configured, is not.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { listenOnWorkerPort } from '../../bin/engine.ts';
import { portPlan } from '../../bin/data-dir.ts';
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';

function listen(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

async function world(kept: boolean) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ports-'));
  if (kept) await portPlan(dataDir);
  const ports = await portPlan(dataDir);
  const taker = await listen(ports.worker);
  const deps = { platformEndpoints: [{ host: '127.0.0.1', port: ports.worker }] };
  const opts = { config: loadConfig({ NODE_ENV: 'test' }), dataDir, ports, deps, log: createLogger('error') } as unknown as Parameters<typeof listenOnWorkerPort>[0];
  return { dataDir, ports, taker, deps, opts, close: () => { taker.close(); fs.rmSync(dataDir, { recursive: true, force: true }); } };
}

test('a worker port chosen by this start and taken before the bind is chosen again, kept and refused to tenants', async () => {
  const w = await world(false);
  const taken = w.ports.worker;
  try {
    const server = await listenOnWorkerPort(w.opts, listen);
    const bound = (server.address() as net.AddressInfo).port;
    server.close();
    assert.notEqual(bound, taken);
    assert.equal(w.ports.worker, bound);
    assert.equal(JSON.parse(fs.readFileSync(path.join(w.dataDir, 'ports.json'), 'utf8')).worker, bound, 'the new port is kept for the next start');
    assert.ok(w.deps.platformEndpoints.some((e) => e.port === bound), 'the egress guard knows the new port');
  } finally {
    w.close();
  }
});

test('a worker port kept from an earlier start is not changed: its bind failure stops the start', async () => {
  const w = await world(true);
  const taken = w.ports.worker;
  try {
    await assert.rejects(listenOnWorkerPort(w.opts, listen), { code: 'EADDRINUSE' });
    assert.equal(JSON.parse(fs.readFileSync(path.join(w.dataDir, 'ports.json'), 'utf8')).worker, taken);
  } finally {
    w.close();
  }
});

test('a configured worker port is not changed: its bind failure stops the start', async () => {
  const w = await world(false);
  const taken = w.ports.worker;
  try {
    const opts = { ...w.opts, config: loadConfig({ NODE_ENV: 'test', WORKER_PORT: String(taken) }) };
    await assert.rejects(listenOnWorkerPort(opts, listen), { code: 'EADDRINUSE' });
    assert.equal(w.ports.worker, taken);
  } finally {
    w.close();
  }
});
