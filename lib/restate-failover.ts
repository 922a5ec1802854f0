// Restate as a cluster: the platform is given every node's address (RESTATE_INGRESS_URL and
// RESTATE_ADMIN_URL take a comma-separated list) and sends each request to the node that answered
// last, moving on to the next one in the list when a node cannot be connected to. Any node of a
// cluster serves the ingress and admin APIs of the whole cluster, so which node answers does not
// change the answer.

/** The addresses of a setting: one URL, or several separated by commas (no trailing slash). */
export function restateAddresses(value: string): string[] {
  return value.split(',').map((part) => part.trim().replace(/\/+$/, '')).filter((part) => part.length > 0);
}

/** The setting's value is one URL or a comma-separated list of them (http or https). */
export function isRestateAddressList(value: string): boolean {
  const addresses = restateAddresses(value);
  return addresses.length > 0 && addresses.every((address) => {
    try {
      return ['http:', 'https:'].includes(new URL(address).protocol);
    } catch {
      return false;
    }
  });
}

/** The address requests are written against (the list's first): a failover fetch rewrites it to the node it uses. */
export function primaryAddress(value: string): string {
  const [first] = restateAddresses(value);
  if (!first) throw new Error('no Restate address given');
  return first;
}

/**
 * Errors where the request never reached a server (no connection was made): sending it to another
 * node cannot run anything twice. A connection reset mid-request is not among them; the callers
 * retry those as they did against one node (idempotency keys, workflow keys).
 */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

function notConnected(err: unknown): boolean {
  for (let cause: unknown = err, depth = 0; cause && depth < 5; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_CONNECTED.has(code)) return true;
    // undici puts several connection attempts (IPv4 and IPv6) in an AggregateError
    if (cause instanceof AggregateError && cause.errors.some((e) => notConnected(e))) return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}

/** which node of a list answered last, per list: shared by every client of the same setting */
const preferred = new Map<string, number>();

/**
 * A fetch for requests written against the list's first address (primaryAddress): each goes to the
 * node that answered last and, when that node cannot be connected to, to the next ones in order.
 * With one address it is plain fetch.
 */
export function failoverFetch(value: string, inner: typeof fetch = globalThis.fetch): typeof fetch {
  const addresses = restateAddresses(value);
  if (addresses.length <= 1) return (input, init) => inner(input, init);
  const key = addresses.join(',');
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const from = addresses.find((address) => url === address || url.startsWith(`${address}/`) || url.startsWith(`${address}?`));
    if (from === undefined) return inner(input, init);
    const rest = url.slice(from.length);
    const start = preferred.get(key) ?? 0;
    let failure: unknown;
    for (let i = 0; i < addresses.length; i++) {
      const index = (start + i) % addresses.length;
      try {
        const res = await inner(`${addresses[index]}${rest}`, init);
        preferred.set(key, index);
        return res;
      } catch (err) {
        if (!notConnected(err) || init?.signal?.aborted) throw err;
        failure = err;
      }
    }
    throw failure;
  };
}

/** One request to a Restate API (ingress or admin) given by a setting's value, path from the root. */
export function restateFetch(value: string, path: string, init?: RequestInit): Promise<Response> {
  return failoverFetch(value)(`${primaryAddress(value)}${path}`, init);
}
