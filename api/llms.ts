// /llms.txt (what a model needs to act: authentication, errors, paging, idempotency, limits, the
// main request bodies, every public operation) and /llms-full.txt (every operation's schemas in
// compact form), both built from the route declarations and the error catalog.
import { describeNeed } from '../lib/permissions.ts';
import { z } from 'zod';
import { errorCatalog } from '../lib/error-catalog.ts';
import type { Config } from '../lib/config.ts';
import type { RateLimitRow, RouteDef } from './route.ts';

type AnyRoute = Omit<RouteDef<any, any, any>, 'handler'>;
type Json = Record<string, any>;

/** Operations whose request bodies /llms.txt spells out. */
const MAIN_OPERATIONS = [
  'POST /api/api-keys', 'POST /api/model-provider-credentials', 'POST /api/models', 'POST /api/packages/import',
  'POST /api/agents/{scope}/{name}/run', 'GET /api/runs/{id}', 'GET /api/runs', 'POST /api/end-users',
];

const isPublic = (r: AnyRoute) => r.stage !== 'internal' && !r.path.startsWith('/internal/') && !r.path.startsWith('/api/docs/');

const SAFE = Number.MAX_SAFE_INTEGER;

/** A JSON Schema in one line: {name: string, tags?: string[]}; $refs resolved against root. */
export function compact(schema: Json | boolean | undefined, depth = 0, root: Json | undefined = typeof schema === 'object' ? schema : undefined): string {
  if (schema === undefined || schema === true) return 'any';
  if (schema === false) return 'never';
  if (typeof schema.$ref === 'string' && root) {
    const target = schema.$ref.replace(/^#\//, '').split('/').reduce<any>((node, key) => node?.[key], root);
    return target ? compact(target, depth, root) : 'any';
  }
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v: unknown) => JSON.stringify(v)).join('|');
  const union = schema.anyOf ?? schema.oneOf;
  if (union) return union.map((s: Json) => compact(s, depth, root)).join(' | ');
  const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length === 1 && types[0] === 'null') return 'null';
  const nullable = types.includes('null') ? ' | null' : '';
  const type = types.find((t) => t !== 'null');
  if (type === 'array') return `${compact(schema.items, depth, root)}[]${nullable}`;
  if (type === 'object' || schema.properties) {
    if (depth >= 3) return `object${nullable}`;
    const required = new Set<string>(schema.required ?? []);
    const props = Object.entries<Json>(schema.properties ?? {}).map(([k, v]) => `${k}${required.has(k) ? '' : '?'}: ${compact(v, depth + 1, root)}`);
    const extra = schema.additionalProperties;
    if (extra && typeof extra === 'object' && Object.keys(extra).length) props.push(`[key]: ${compact(extra, depth + 1, root)}`);
    else if (!schema.properties && extra !== false) props.push('[key]: any');
    return `{${props.join(', ')}}${nullable}`;
  }
  const bounds = [schema.format, schema.minimum !== undefined && Math.abs(schema.minimum) < SAFE ? `≥${schema.minimum}` : '', schema.maximum !== undefined && Math.abs(schema.maximum) < SAFE ? `≤${schema.maximum}` : '', schema.default !== undefined ? `default ${JSON.stringify(schema.default)}` : '']
    .filter(Boolean).join(', ');
  return `${type ?? 'any'}${bounds ? `(${bounds})` : ''}${nullable}`;
}

function jsonSchemaOf(schema: z.ZodType | undefined, io: 'input' | 'output'): Json | undefined {
  if (!schema) return undefined;
  try {
    return z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
  } catch {
    return undefined;
  }
}

function requestLines(r: AnyRoute): string[] {
  const lines: string[] = [];
  const query = jsonSchemaOf(r.query, 'input');
  if (query?.properties) lines.push(`  query: ${compact(query).slice(1, -1)}`);
  if (r.body) lines.push(`  body: ${compact(jsonSchemaOf(r.body, 'input'))}`);
  for (const [type, schema] of Object.entries(r.bodyContent ?? {})) lines.push(`  body (${type}): ${compact(jsonSchemaOf(schema, 'input'))}`);
  return lines;
}

function operationLine(r: AnyRoute): string {
  const notes = [r.permission ? `needs ${describeNeed(r.permission)}` : '', r.sessionOnly ? 'session only' : '', r.idempotent ? 'Idempotency-Key' : '', r.stage === 'public' || r.stage === 'auth' ? 'no API key' : ''].filter(Boolean);
  return `- \`${r.method.toUpperCase()} ${r.path}\`: ${r.summary}${notes.length ? ` (${notes.join('; ')})` : ''}`;
}

/** A limit row's value; a configurable one needs the instance's configuration. */
function perMinute(row: RateLimitRow, config: Config | undefined): string {
  if (typeof row.perMinute === 'number') return String(row.perMinute);
  return config ? String(row.perMinute(config)) : '(set by configuration)';
}

function errorFamilies(): string[] {
  const byStatus = new Map<number, string[]>();
  for (const [code, entry] of Object.entries(errorCatalog)) byStatus.set(entry.status, [...(byStatus.get(entry.status) ?? []), code]);
  return [...byStatus.entries()].sort(([a], [b]) => a - b).map(([status, codes]) => `- ${status}: ${codes.sort().join(', ')}`);
}

export function buildLlmsTxt(routes: AnyRoute[], config?: Config): string {
  const visible = routes.filter(isPublic);
  const limited = visible.filter((r) => r.rateLimit);
  const main = MAIN_OPERATIONS.flatMap((op) => visible.filter((r) => `${r.method.toUpperCase()} ${r.path}` === op));
  const lines = [
    '# Agent Platform API',
    '',
    '> Multi-tenant HTTP API for packaging, running and scheduling AI agents and embedding them in other products. All endpoints are under /api; JSON in and out.',
    '',
    '- [OpenAPI 3.1 document](/api/openapi.json): every operation with its schemas and response headers',
    '- [Every operation in compact form](/llms-full.txt)',
    '- [Interactive reference](/api/docs)',
    '',
    '## Authentication',
    '',
    '- API key: `Authorization: Bearer apst_...`. Keys are created with a signed-in session: `POST /api/api-keys` with the session cookie and `X-Org-Id`, `X-Space-Id` (the first session comes from `POST /api/auth/bootstrap/redeem` or `POST /api/auth/sign-in/email`). The full key is shown once.',
    '- A key is pinned to the space it was created in and acts with its scopes intersected with what its creator holds there now. It cannot create, list or revoke keys (session only), cannot preview roles (`X-View-As`: 400 view_as_unsupported), and a differing `X-Space-Id` is 403.',
    '- Session cookie: `<prefix>.session_token` (default prefix agent_platform), set by sign-in. Sessions send `X-Org-Id` (organization UUID) and, on space-scoped routes (/api/agents, /api/runs, /api/end-users, /api/api-keys, /api/packages, ...), `X-Space-Id`; missing it is 400 with param X-Space-Id.',
    '- Other headers: `Service-Version: YYYY-MM-DD` pins the API version; `Service-User: eu_...` (API keys) acts for an end-user; every response carries `Request-Id`.',
    '- No credential: 401 unauthorized with `WWW-Authenticate: Bearer`.',
    '',
    '## Errors',
    '',
    'Every error is `application/problem+json` (RFC 9457): type, title, status, detail, instance, code, request_id; sometimes param (the header or query parameter at fault), retry_after, errors[] ({field, code, message}). Branch on the status, then `code`; treat an unknown code as its status class. A bad body is 400 validation_failed with one errors[] entry per field (required, invalid_type, invalid_format, out_of_range, unknown_field, invalid_value, ...); a bad query parameter or header is 400 invalid_request with param.',
    '',
    'Codes by status:',
    '',
    ...errorFamilies(),
    '',
    '## Pagination',
    '',
    'Lists answer `{object: "list", data: [...], hasMore, total?, limit?}`. Offset lists (runs, packages) take `limit` and `offset`; cursor lists (end-users) take `limit`, `startingAfter` (id of the last item received) and `endingBefore`; run logs take `since` (a sequence) and `limit`. Default limit 20 (50 for an agent\'s runs, 1000 for logs), maximum 100 (1000 for logs); an out-of-range limit falls back to the default, a non-integer one is 400 invalid_request. Follow the `Link` header: rel="next" while more follows, and prev, first, last where they apply.',
    '',
    '## Idempotency',
    '',
    `Send \`Idempotency-Key: <up to 255 characters>\` on ${visible.filter((r) => r.idempotent).map((r) => `\`${r.method.toUpperCase()} ${r.path}\``).join(', ')}. The same key with the same request replays the stored answer for 24 hours with \`Idempotent-Replayed: true\` (its Request-Id, header and body, names the first request); with another request it is 422 idempotency_conflict; while the first is running, 409 idempotency_in_progress. A 5xx releases the key. Other writes refuse the header (400 idempotency_not_supported).`,
    '',
    '## Rate limits',
    '',
    `Per route and per caller, in one-minute windows. Limited responses carry \`RateLimit: limit=<n>, remaining=<n>, reset=<s>\` and \`RateLimit-Policy: <n>;w=60\`; beyond the limit, 429 rate_limited with \`Retry-After\` (seconds) and retry_after. A 503 (starting, shutting_down) also carries Retry-After. Limits: ${limited.map((r) => `${r.method.toUpperCase()} ${r.path} ${perMinute(r.rateLimit!, config)}`).join('; ')}.`,
    '',
    '## Long polling',
    '',
    '`GET /api/runs/{id}?wait=<seconds>|true` answers when the run ends (success, failed, timeout, cancelled) or after up to 55 seconds with its current state; call again while it is pending or running.',
    '',
    '## Main request bodies',
    '',
    'Compact notation: `name?` is optional, `T[]` an array, `a|b` one of, `[key]: T` a map.',
    '',
  ];
  for (const r of main) lines.push(operationLine(r), ...requestLines(r));
  lines.push('');
  const byTag = new Map<string, AnyRoute[]>();
  for (const r of visible) byTag.set(r.tag, [...(byTag.get(r.tag) ?? []), r]);
  lines.push('## Operations', '');
  for (const [tag, list] of [...byTag.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`### ${tag}`, '');
    for (const r of list) lines.push(operationLine(r));
    lines.push('');
  }
  return lines.join('\n');
}

export function buildLlmsFullTxt(routes: AnyRoute[]): string {
  const lines = ['# Agent Platform API: every operation', '', 'Compact notation: `name?` is optional, `T[]` an array, `a|b` one of, `[key]: T` a map. Errors are problem documents (see /llms.txt).', ''];
  for (const r of routes.filter(isPublic)) {
    lines.push(operationLine(r), ...requestLines(r));
    for (const [status, spec] of Object.entries(r.responses)) {
      if (Number(status) >= 400) continue;
      const schema = jsonSchemaOf(spec.schema, 'output');
      lines.push(`  ${status}: ${schema ? compact(schema) : spec.contentType ?? spec.description}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
