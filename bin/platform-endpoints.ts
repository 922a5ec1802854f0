// The platform's own endpoints, as known at start: the egress guard refuses them on a
// tenant-supplied URL (a model credential's base_url, a repository host) whatever
// EGRESS_ALLOW_INTERNAL_HOSTS says. Sidecars' ports are not listed: each answers only its run's token.
import type { Config } from '../lib/config.ts';
import type { PlatformEndpoint } from '../lib/egress.ts';
import { restateAddresses } from '../lib/restate-failover.ts';
import type { PortName } from './data-dir.ts';

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443, 'postgres:': 5432, 'postgresql:': 5432, 'redis:': 6379, 'rediss:': 6379 };

/** host and port of a URL setting; undefined when it is absent or unreadable (loadConfig checked the ones that must parse). */
function endpointOf(raw: string | undefined): PlatformEndpoint | undefined {
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  const port = url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol];
  // a socket path (postgres://?host=/run/...) has no TCP endpoint
  return port && url.hostname ? { host: url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase(), port } : undefined;
}

export function platformEndpoints(config: Config, ports: Record<PortName, number>, databaseUrl: string): PlatformEndpoint[] {
  const local = (port: number): PlatformEndpoint => ({ host: '127.0.0.1', port });
  const found: Array<PlatformEndpoint | undefined> = [
    // PORT=0 is known once the API listens: bin/host.ts adds it then
    config.PORT ? { host: config.HOST.toLowerCase(), port: config.PORT } : undefined,
    endpointOf(config.INTERNAL_API_URL),
    local(config.WORKER_PORT ?? ports.worker),
    endpointOf(config.WORKER_ENDPOINT_URL),
    // bin/engine.ts starts the embedded Restate unless both of its addresses are given
    ...(config.RESTATE_INGRESS_URL && config.RESTATE_ADMIN_URL
      ? [...restateAddresses(config.RESTATE_INGRESS_URL), ...restateAddresses(config.RESTATE_ADMIN_URL)].map(endpointOf)
      : [local(ports.restateIngress), local(ports.restateAdmin), local(ports.restateNode)]),
    endpointOf(databaseUrl),
    endpointOf(config.REDIS_URL),
  ];
  const seen = new Set<string>();
  return found.filter((e): e is PlatformEndpoint => {
    if (!e || seen.has(`${e.host} ${e.port}`)) return false;
    seen.add(`${e.host} ${e.port}`);
    return true;
  });
}
