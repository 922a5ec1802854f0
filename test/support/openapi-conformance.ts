// Checks live responses against the instance's own OpenAPI document: the body against the
// response schema of its status (objects closed: a field the document does not describe is a
// mismatch), and each meaningful header against the headers the response declares.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { WireResponse } from './http.ts';

// ajv-formats is CommonJS; its module object is the plugin function itself.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

const MEANINGFUL_HEADERS = ['Link', 'Location', 'ETag', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'Idempotent-Replayed', 'Request-Id', 'Service-Version', 'WWW-Authenticate'];

/** Every object that lists its properties is closed unless it says otherwise. */
function closeObjects(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closeObjects);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v as object).map(([p, s]) => [p, closeObjects(s)])) : closeObjects(v);
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  literals: number;
  op: { responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema?: unknown }> }> };
}

export function conformanceChecker(doc: { paths: Record<string, Record<string, any>>; components: Record<string, unknown> }) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const components = closeObjects(doc.components);
  const compiled = new Map<string, ValidateFunction>();
  const operations: Operation[] = [];
  for (const [template, ops] of Object.entries(doc.paths)) {
    const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
    for (const [method, op] of Object.entries(ops)) operations.push({ method, template, pattern, literals: template.replace(/\{[^}]+\}/g, '').length, op });
  }
  // a literal segment wins over a parameter, as in the router
  operations.sort((a, b) => b.literals - a.literals);

  /** The mismatches of one response, empty when it conforms. */
  return function check(method: string, url: string, res: WireResponse): string[] {
    const path = url.split('?')[0];
    const found = operations.find((o) => o.method === method.toLowerCase() && o.pattern.test(path));
    const at = `${method} ${path} ${res.status}`;
    if (!found) return [`${at}: no operation in the document`];
    const response = found.op.responses[String(res.status)];
    if (!response) return [`${at}: status not declared by ${found.template}`];
    const problems: string[] = [];
    for (const name of MEANINGFUL_HEADERS) {
      if (res.headers.get(name) !== null && !response.headers?.[name]) problems.push(`${at}: header ${name} not declared`);
    }
    const type = (res.headers.get('content-type') ?? '').split(';')[0].trim();
    if (!res.text) return problems;
    const content = response.content?.[type] ?? response.content?.[`${type.split('/')[0]}/*`] ?? response.content?.['*/*'];
    if (!content) return [...problems, `${at}: content type ${type} not declared`];
    if (!type.includes('json') || !content.schema) return problems;
    const key = `${found.method} ${found.template} ${res.status} ${type}`;
    const validate = compiled.get(key) ?? ajv.compile({ ...(closeObjects(content.schema) as object), components });
    compiled.set(key, validate);
    if (!validate(JSON.parse(res.text))) {
      for (const e of validate.errors ?? []) problems.push(`${at}: ${e.instancePath || '/'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` (${e.params.additionalProperty})` : ''}`);
    }
    return problems;
  };
}
