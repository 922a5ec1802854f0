// Which hosts a docker sandbox's sidecar reaches through the worker's relays (needsRelay): loopback
// and every internal address literal (the host's own are closed to the egress network, another
// docker network's are isolated from it); public addresses and names are reached directly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { needsRelay } from '../../activities/sandbox/docker-network.ts';

test('loopback, private, link-local and unique-local addresses are relayed, as URL hostnames give them', () => {
  for (const host of ['localhost', '127.0.0.1', '127.8.9.10', '[::1]', '::1', '10.1.2.3', '172.30.87.5', '192.168.1.20', '169.254.1.1', '[fd00::5]', '[fe80::1]', 'LOCALHOST']) {
    assert.equal(needsRelay(host), true, host);
  }
});

test('public addresses and host names are left to the sidecar', () => {
  for (const host of ['8.8.8.8', '[2001:4860:4860::8888]', 'api.openai.com', 'models.internal', 'platform-events']) {
    assert.equal(needsRelay(host), false, host);
  }
});
