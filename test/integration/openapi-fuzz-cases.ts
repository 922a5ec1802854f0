// Bad requests generated from an OpenAPI document, one operation at a time: bad path ids, bad
// query values, wrong types and missing fields in bodies, NUL and control bytes, unpaired
// surrogates, huge strings, bytes that are not UTF-8, malformed JSON and multipart, wrong content
// types and bad header values. Deterministic for a seed.

/** mulberry32: a small seeded generator, so a failure replays exactly. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Auth = 'key' | 'session' | 'none';

export interface Probe {
  label: string;
  method: string;
  /** the request target, already percent-encoded as it goes on the wire */
  target: string;
  auth: Auth;
  headers: Record<string, string>;
  body?: string | Buffer;
}

export interface Operation {
  method: string;
  path: string;
  op: any;
}

export interface Ids {
  orgId: string;
  spaceId: string;
}

function pick<T>(rand: () => number, items: readonly T[], n: number): T[] {
  const pool = [...items];
  const out: T[] = [];
  while (out.length < n && pool.length) out.push(pool.splice(Math.floor(rand() * pool.length), 1)[0]);
  return out;
}

// raw, already-encoded path segments: NUL, control bytes, an encoded surrogate, bad escapes, huge
const BAD_SEGMENTS = ['%00', 'a%00b', '%01%1F', '%7F', '%ED%A0%80', '%zz', '%E0%A4', '%C3%28', 'x'.repeat(6000), '..', '%2E%2E', '-1', '0', '%20', 'null', '%27%3B--', 'usr_%FF%FE', '%F0%9F%98%80'];
// raw, already-encoded query values
const BAD_QUERY = ['%00', 'a%00', '', '-1', '0', '1e999', 'NaN', '99999999999999999999', '1.5', 'true', 'abc', '%ED%A0%80', '%01%02', '%FF', 'x'.repeat(6000), '%5B%5D', '2020-13-45', '%zz'];
// JSON values of the wrong kind for most fields
const BAD_VALUES: unknown[] = [
  null, 0, -1, 1e308, 1.5, true, '', ' ', 'x'.repeat(70_000), 'a\u0000b', '\ud800', 'z\udfff', '\u0001\u0008\u001b\u007f', '%00',
  [], [null], [1, 'a'], {}, { '\u0000': 1 }, { a: { b: { c: [] } } }, '2020-13-45T99:99:99Z', 'not a url', -0.000001, 2 ** 64,
];
// header values that reach the app (node's parser refuses NUL and other control bytes itself)
const BAD_HEADERS: Array<[string, string]> = [
  ['x-org-id', 'not-a-uuid'], ['x-org-id', '\u00ff\u00fe'], ['x-org-id', '00000000-0000-0000-0000-000000000000'], ['x-space-id', 'spc_%00'],
  ['x-space-id', 'x'.repeat(4000)], ['service-version', '2020-99-99'], ['service-version', 'latest'], ['idempotency-key', 'k'.repeat(300)],
  ['idempotency-key', ''], ['x-view-as', 'owner'], ['x-view-as', '{"role":'], ['traceparent', '00-zz-zz-01'], ['service-user', 'eu_%00'],
  ['accept', '\u00ff/\u00ff'], ['content-type', 'application/json; charset=latin1'], ['cookie', 'agent_platform.session_token=%'],
  ['cookie', `agent_platform.session_token=${'c'.repeat(6000)}`], ['authorization', 'Bearer apst_\u00ff\u00ff'], ['authorization', 'Basic Zm9vOmJhcg=='],
  ['authorization', 'Bearer a.b.c'], ['if-none-match', '"\u00ff'],
];
const BOUNDARY = 'fuzzboundary';
const RAW_BODIES: Array<[string, string, string | Buffer]> = [
  ['malformed JSON', 'application/json', '{"a":'],
  ['trailing garbage', 'application/json', '{} {}'],
  ['not UTF-8', 'application/json', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0x22, 0x7d])],
  ['a JSON array', 'application/json', '[]'],
  ['JSON null', 'application/json', 'null'],
  ['a JSON number', 'application/json', '12'],
  ['a JSON string', 'application/json', '"s"'],
  ['an empty object', 'application/json', '{}'],
  ['deep nesting', 'application/json', `{"a":${'['.repeat(3000)}${']'.repeat(3000)}}`],
  ['a huge string', 'application/json', JSON.stringify({ a: 'h'.repeat(300_000) })],
  ['NUL in a key', 'application/json', '{"\\u0000":1}'],
  ['prototype keys', 'application/json', '{"__proto__":{"x":1},"constructor":{"prototype":1}}'],
  ['text/plain', 'text/plain', '{}'],
  ['no content type', '', '{}'],
  ['form encoding', 'application/x-www-form-urlencoded', 'a=%00&b=1'],
  ['multipart without a boundary', 'multipart/form-data', '--x\r\n'],
  ['truncated multipart', `multipart/form-data; boundary=${BOUNDARY}`, `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\nPK\u0003\u0004`],
  ['multipart with a NUL file name', `multipart/form-data; boundary=${BOUNDARY}`, `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''a%00.zip\r\n\r\nPK\r\n--${BOUNDARY}--\r\n`],
];

function resolveRef(doc: any, schema: any): any {
  let s = schema;
  for (let i = 0; s && s.$ref && i < 8; i++) s = s.$ref.replace(/^#\//, '').split('/').reduce((o: any, k: string) => o?.[k], doc);
  return s;
}

/** The properties of a JSON body schema (first object branch of a union). */
function bodyProperties(doc: any, op: any): string[] {
  const schema = resolveRef(doc, op.requestBody?.content?.['application/json']?.schema);
  if (!schema) return [];
  if (schema.properties) return Object.keys(schema.properties);
  for (const branch of schema.anyOf ?? schema.oneOf ?? schema.allOf ?? []) {
    const b = resolveRef(doc, branch);
    if (b?.properties) return Object.keys(b.properties);
  }
  return [];
}

function authsFor(path: string, op: any): Auth[] {
  if (!(op.security ?? []).length) return path.startsWith('/api/auth') ? ['session', 'none'] : ['none'];
  return ['key', 'session'];
}

/** A path with every parameter filled: real org and space ids where they fit (never to delete), junk elsewhere. */
function basePath(path: string, method: string, ids: Ids): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [, name] of path.matchAll(/\{([^}]+)\}/g)) {
    if (name === 'orgId' && method !== 'delete') values[name] = ids.orgId;
    else if (name === 'spaceId' && method !== 'delete') values[name] = ids.spaceId;
    else if (name === 'scope') values[name] = '@fuzz';
    else if (name === 'version') values[name] = '1.0.0';
    else values[name] = `${name}_fuzz`;
  }
  return values;
}

function fill(path: string, values: Record<string, string>): string {
  return path.replace(/\{([^}]+)\}/g, (_m, name: string) => values[name]);
}

/** The probes for one operation. */
export function probesFor(doc: any, { method, path, op }: Operation, ids: Ids, rand: () => number): Probe[] {
  const auths = authsFor(path, op);
  const auth = () => auths[Math.floor(rand() * auths.length)];
  const M = method.toUpperCase();
  const base = basePath(path, method, ids);
  const target = fill(path, base);
  const out: Probe[] = [];
  const add = (label: string, p: Omit<Probe, 'label' | 'method' | 'auth' | 'headers'> & { auth?: Auth; headers?: Record<string, string> }) =>
    out.push({ label: `${M} ${path} ${label}`, method: M, auth: p.auth ?? auth(), headers: p.headers ?? {}, target: p.target, body: p.body });

  add('without a credential', { target, auth: 'none' });
  for (const name of Object.keys(base)) {
    for (const bad of ['%00', ...pick(rand, BAD_SEGMENTS, 4)]) add(`path ${name}=${bad.slice(0, 20)}`, { target: fill(path, { ...base, [name]: bad }) });
  }
  const query = (op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name as string);
  for (const name of query) {
    for (const bad of ['%00', ...pick(rand, BAD_QUERY, 3)]) add(`query ${name}=${bad.slice(0, 20)}`, { target: `${target}?${name}=${bad}` });
    add(`query ${name} repeated`, { target: `${target}?${name}=1&${name}=2` });
  }
  add('unknown query parameters', { target: `${target}?%00=1&${'q'.repeat(300)}=%FF&a[b]=c` });
  for (const [name, value] of pick(rand, BAD_HEADERS, 4)) add(`header ${name}: ${value.slice(0, 20)}`, { target, headers: { [name]: value } });

  if (!['POST', 'PUT', 'PATCH'].includes(M) && !op.requestBody) return out;
  for (const [label, type, body] of RAW_BODIES) add(`body: ${label}`, { target, body, headers: type ? { 'content-type': type } : {} });
  const props = bodyProperties(doc, op);
  for (const name of pick(rand, props, 8)) {
    for (const value of ['a\u0000b', ...pick(rand, BAD_VALUES, 4)]) {
      add(`body ${name}=${JSON.stringify(value)?.slice(0, 20)}`, { target, body: JSON.stringify({ [name]: value }), headers: { 'content-type': 'application/json' } });
    }
  }
  if (props.length) add('body with an unknown field', { target, body: JSON.stringify({ [props[0]]: 'x', unknown_field_fuzz: 1 }), headers: { 'content-type': 'application/json' } });
  return out;
}
