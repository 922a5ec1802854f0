// The platform's own endpoints, as bin/host.ts hands them to every egress guard: the API, the
// workflow endpoint, Restate's ingress, admin and node ports, PostgreSQL and Redis.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { platformEndpoints } from '../../bin/platform-endpoints.ts';
import { loadConfig } from '../../lib/config.ts';

const ports = { postgres: 15432, restateIngress: 18080, restateAdmin: 19070, restateNode: 15122, worker: 19080 };
const sorted = (list: Array<{ host: string; port: number }>) => list.map((e) => `${e.host} ${e.port}`).sort();

test('an all-embedded platform protects its API, workflow endpoint, Restate and embedded PostgreSQL ports', () => {
  const config = loadConfig({ PORT: '3000', HOST: '0.0.0.0' });
  assert.deepEqual(sorted(platformEndpoints(config, ports, 'postgres://postgres:pw@127.0.0.1:15432/platform')), sorted([
    { host: '0.0.0.0', port: 3000 },
    { host: '127.0.0.1', port: 19080 },
    { host: '127.0.0.1', port: 18080 },
    { host: '127.0.0.1', port: 19070 },
    { host: '127.0.0.1', port: 15122 },
    { host: '127.0.0.1', port: 15432 },
  ]));
});

test('external parts are protected where the settings say they are', () => {
  const config = loadConfig({
    PORT: '8443',
    DATABASE_URL: 'postgres://app@db.internal/platform',
    REDIS_URL: 'redis://cache.internal:6380',
    RESTATE_INGRESS_URL: 'http://restate.internal:8080',
    RESTATE_ADMIN_URL: 'http://restate.internal:9070',
    WORKER_PORT: '9081',
    WORKER_ENDPOINT_URL: 'http://worker.internal:9081',
    INTERNAL_API_URL: 'http://platform.internal:8443',
  });
  const found = sorted(platformEndpoints(config, ports, config.DATABASE_URL!));
  for (const expected of ['127.0.0.1 8443', 'db.internal 5432', 'cache.internal 6380', 'restate.internal 8080', 'restate.internal 9070', '127.0.0.1 9081', 'worker.internal 9081', 'platform.internal 8443']) {
    assert.ok(found.includes(expected), `${expected} in ${found.join(', ')}`);
  }
  // the embedded Restate and PostgreSQL ports are not in use: no need to protect them
  for (const unused of ['127.0.0.1 18080', '127.0.0.1 19070', '127.0.0.1 15122', '127.0.0.1 15432']) assert.ok(!found.includes(unused), `${unused} in ${found.join(', ')}`);
});
