// The operations an MCP client can search, describe and invoke: those of the instance's own OpenAPI
// document that take the caller's credential (public documents, sign-in and the MCP endpoint
// itself are left out).
import { dispatch, type Caller } from './dispatch.ts';
import { MCP_PATH_PREFIX } from './protected-resource.ts';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export interface Operation {
  operation_id: string;
  method: string;
  path: string;
  summary: string;
  tag: string;
  permission: string | null;
  /** the raw operation object of the document */
  spec: Record<string, any>;
}

export interface Catalog {
  operations: Operation[];
  byId: Map<string, Operation>;
  components: Record<string, any>;
}

export function catalogOf(document: Record<string, any>): Catalog {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<Record<string, any>>(document.paths ?? {})) {
    if (path.startsWith(MCP_PATH_PREFIX)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!op || !Array.isArray(op.security) || op.security.length === 0) continue;
      operations.push({
        operation_id: op.operationId,
        method: method.toUpperCase(),
        path,
        summary: op.summary ?? '',
        tag: op.tags?.[0] ?? '',
        permission: op['x-permission'] ?? null,
        spec: op,
      });
    }
  }
  return { operations, byId: new Map(operations.map((o) => [o.operation_id, o])), components: document.components ?? {} };
}

export type CatalogLoader = (caller: Caller) => Promise<Catalog>;

/** The document never changes while the process lives: read once, through the app itself. */
export function createCatalogLoader(): CatalogLoader {
  let loaded: Promise<Catalog> | null = null;
  return (caller) => {
  loaded ??= dispatch({ ...caller, headers: caller.headers.host ? { host: caller.headers.host } : {} }, { method: 'GET', target: '/api/openapi.json', maxBytes: Number.MAX_SAFE_INTEGER })
    .then((a) => {
      if (a.status !== 200 || typeof a.body !== 'object' || a.body === null) throw new Error(`the OpenAPI document answered ${a.status}`);
      return catalogOf(a.body as Record<string, any>);
    })
    .catch((err) => {
      loaded = null;
      throw err;
    });
  return loaded;
  };
}

export interface Found {
  operation_id: string;
  method: string;
  path: string;
  summary: string;
  tag: string;
  permission: string | null;
}

const summaryOf = (o: Operation): Found => ({ operation_id: o.operation_id, method: o.method, path: o.path, summary: o.summary, tag: o.tag, permission: o.permission });

/** Operations ranked by how many of the query's words their method, path, summary, tag and permission hold. */
export function searchOperations(catalog: Catalog, query: string, limit: number): { total: number; operations: Found[] } {
  const words = query.toLowerCase().split(/[^a-z0-9@:_{}-]+/).filter(Boolean);
  const scored = catalog.operations.map((o) => {
    const hay = `${o.method} ${o.path} ${o.summary} ${o.tag} ${o.permission ?? ''} ${o.operation_id}`.toLowerCase();
    return { o, score: words.reduce((n, w) => n + (hay.includes(w) ? 1 : 0), 0) };
  });
  const hits = scored.filter((s) => words.length === 0 || s.score > 0)
    .sort((a, b) => b.score - a.score || a.o.path.localeCompare(b.o.path) || a.o.method.localeCompare(b.o.method));
  return { total: hits.length, operations: hits.slice(0, limit).map((s) => summaryOf(s.o)) };
}

/** Every `#/components/...` reference reachable from a value, with its target. */
function referenced(value: unknown, components: Record<string, any>, into: Record<string, unknown>): void {
  if (Array.isArray(value)) {
    for (const v of value) referenced(v, components, into);
    return;
  }
  if (!value || typeof value !== 'object') return;
  for (const [k, v] of Object.entries(value)) {
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/') && !(v in into)) {
      const [, , kind, name] = v.split('/');
      const target = components[kind]?.[name];
      into[v] = target ?? null;
      referenced(target, components, into);
    } else referenced(v, components, into);
  }
}

export interface Description extends Found {
  parameters: unknown[];
  request_body: unknown;
  responses: Record<string, unknown>;
  rate_limit_per_minute: number | null;
  /** the targets of every $ref above, by reference */
  components: Record<string, unknown>;
}

export function describeOperation(catalog: Catalog, op: Operation): Description {
  const { parameters = [], requestBody = null, responses = {} } = op.spec;
  const components: Record<string, unknown> = {};
  referenced([parameters, requestBody, responses], catalog.components, components);
  return {
    ...summaryOf(op),
    parameters,
    request_body: requestBody,
    responses,
    rate_limit_per_minute: op.spec['x-rate-limit-per-minute'] ?? null,
    components,
  };
}
