import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { restateServerBinary, startRestateServer } from '../../restate/launcher.ts';
import { freePort } from '../../lib/free-port.ts';

/** host:port of every TCP socket the process listens on, from /proc (Linux). */
function listeningAddresses(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]);
    } catch {
      // the descriptor closed while we looked
    }
  }
  const addresses: string[] = [];
  for (const table of ['tcp', 'tcp6']) {
    const lines = readFileSync(`/proc/${pid}/net/${table}`, 'utf8').trim().split('\n').slice(1);
    for (const line of lines) {
      const [, local, , state, , , , , , inode] = line.trim().split(/\s+/);
      if (state !== '0A' || !inodes.has(inode)) continue; // 0A = LISTEN
      const [hexIp, hexPort] = local.split(':');
      addresses.push(`${decodeIp(hexIp)}:${parseInt(hexPort, 16)}`);
    }
  }
  return addresses.sort();
}

function decodeIp(hex: string): string {
  if (hex.length !== 8) return `[${hex}]`; // IPv6: any such listener is a failure anyway
  return [6, 4, 2, 0].map((i) => parseInt(hex.slice(i, i + 2), 16)).join('.');
}

test('the restate-server binary comes from node_modules', () => {
  const binary = restateServerBinary();
  assert.match(binary, /node_modules\/@restatedev\/restate-server-[a-z0-9]+-[a-z0-9]+\/bin\/restate-server$/);
  assert.ok(existsSync(binary));
});

test('restate-server listens on 127.0.0.1 only, on the given ports, and keeps its data under baseDir', async (t) => {
  const baseDir = mkdtempSync(join(tmpdir(), 'restate-launcher-'));
  const [ingressPort, adminPort, nodePort] = await Promise.all([freePort(), freePort(), freePort()]);
  const server = await startRestateServer({ baseDir, ingressPort, adminPort, nodePort });
  t.after(async () => {
    await server.stop();
    rmSync(baseDir, { recursive: true, force: true });
  });
  t.diagnostic(`healthy in ${server.startedInMs} ms`);

  assert.equal(server.ingressUrl, `http://127.0.0.1:${ingressPort}`);
  assert.equal(server.adminUrl, `http://127.0.0.1:${adminPort}`);
  assert.deepEqual(
    listeningAddresses(server.pid),
    [adminPort, ingressPort, nodePort].map((port) => `127.0.0.1:${port}`).sort(),
  );
  assert.ok(existsSync(join(baseDir, 'platform')), 'node data lives under baseDir/<node name>');
  assert.ok(server.startedInMs < 5_000, `started in ${server.startedInMs} ms`);
});

test('stop() ends the process and a second stop() is harmless', async (t) => {
  const baseDir = mkdtempSync(join(tmpdir(), 'restate-launcher-'));
  t.after(() => rmSync(baseDir, { recursive: true, force: true }));
  const [ingressPort, adminPort, nodePort] = await Promise.all([freePort(), freePort(), freePort()]);
  const server = await startRestateServer({ baseDir, ingressPort, adminPort, nodePort });

  await server.stop();
  await server.stop();

  assert.equal(existsSync(`/proc/${server.pid}`), false);
  await assert.rejects(fetch(`${server.adminUrl}/health`));
});

test('a port already taken makes start fail instead of talking to someone else', async (t) => {
  const baseDir = mkdtempSync(join(tmpdir(), 'restate-launcher-'));
  const [ingressPort, adminPort, nodePort] = await Promise.all([freePort(), freePort(), freePort()]);
  const first = await startRestateServer({ baseDir: join(baseDir, 'a'), ingressPort, adminPort, nodePort });
  t.after(async () => {
    await first.stop();
    rmSync(baseDir, { recursive: true, force: true });
  });

  await assert.rejects(
    startRestateServer({ baseDir: join(baseDir, 'b'), ingressPort, adminPort, nodePort }),
    /port 127\.0\.0\.1:\d+ is in use/,
  );
});
