// One entry of an integration's auths: how a credential is collected (form, OAuth 2, login)
// and where it may go (authorized_uris, delivery). Everything accepted here can be evaluated.
import { parseAuthorizedUri, matchesAuthorizedUri, type AuthorizedUriPattern } from './authorized-uri.ts';
import { indexPath, isJsonObject, withoutUndefined, type FieldReader } from './field-reader.ts';
import { readSchemaHolder } from './manifest-common.ts';
import { AUTH_TYPES, LOGIN_METHODS, type ConnectLogin, type IntegrationAuth, type LoginOutput } from './manifest-types.ts';
import { parseJsonPath, parseSuccessCriterion } from './success-criterion.ts';
import { parseJsonPathExpression } from '../json-path.ts';

const AUTH_KEYS = ['type', 'credentials', 'oauth2', 'connect', 'authorized_uris', 'delivery', 'identity_claims'] as const;
const IDENTITY_CLAIMS = ['account_id', 'label'] as const;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const OUTPUT_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PLACEHOLDER = /\{\{\s*([^{}\s]+)\s*\}\}/g;
const CREDENTIAL_REF = /\{\$credential\.([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Hosts an auth names literally (login URL and authorized_uris), with the field naming each. */
export interface NamedHost {
  host: string;
  field: string;
}

export interface ReadAuth {
  auth?: IntegrationAuth;
  hosts: NamedHost[];
  connect: boolean;
}

export function readAuth(r: FieldReader, field: string, value: unknown): ReadAuth {
  const raw = r.object(field, value, AUTH_KEYS);
  const hosts: NamedHost[] = [];
  if (!raw) return { hosts, connect: false };

  const type = r.oneOf(`${field}.type`, raw.type, AUTH_TYPES, { required: true });
  const connectDeclared = raw.connect !== undefined;
  const credentials = readSchemaHolder(r, `${field}.credentials`, raw.credentials, connectDeclared);

  let oauth2: IntegrationAuth['oauth2'];
  if (type === 'oauth2' || raw.oauth2 !== undefined) {
    if (type !== undefined && type !== 'oauth2') {
      r.fail(`${field}.oauth2`, 'invalid_value', 'is only for auths of type oauth2');
    } else {
      oauth2 = readOAuth2(r, `${field}.oauth2`, raw.oauth2);
    }
  }

  const uris = readAuthorizedUris(r, `${field}.authorized_uris`, raw.authorized_uris, connectDeclared);
  for (const uri of uris ?? []) {
    if (uri.pattern.literal && !uri.pattern.wildcardHost) hosts.push({ host: uri.pattern.host, field: uri.field });
  }

  let connect: IntegrationAuth['connect'];
  const connectRaw = r.object(`${field}.connect`, raw.connect, ['login']);
  if (connectRaw) {
    const login = readLogin(r, `${field}.connect.login`, connectRaw.login, credentials?.schema, uris);
    if (login) {
      connect = { login: login.login };
      hosts.push(login.host);
    }
  }

  // The fields a delivery may name: with a login only its outputs are stored.
  let known: string[] | undefined;
  if (connectDeclared) known = connect ? Object.keys(connect.login.outputs) : undefined;
  else if (credentials && isJsonObject(credentials.schema.properties)) known = Object.keys(credentials.schema.properties);
  if (known && type === 'oauth2') known.push('access_token');
  const delivery = readDelivery(r, `${field}.delivery`, raw.delivery, known);
  const identityClaims = readIdentityClaims(r, `${field}.identity_claims`, raw.identity_claims, type === 'oauth2' || connect !== undefined || connectDeclared);

  const auth = withoutUndefined<IntegrationAuth>({
    type: type!,
    credentials,
    oauth2,
    connect,
    authorized_uris: uris?.map((u) => u.text),
    delivery,
    identity_claims: identityClaims,
  });
  return { auth: type ? auth : undefined, hosts, connect: connectDeclared };
}

/**
 * identity_claims: JSONPath expressions (the subset of lib/json-path.ts) naming the connection's
 * account_id and label in the login's JSON answer or the OAuth token answer. An expression that is
 * not one is an invalid_jsonpath fault: the manifest is refused with 400 invalid_config.
 */
function readIdentityClaims(r: FieldReader, field: string, value: unknown, hasAnswer: boolean): IntegrationAuth['identity_claims'] {
  const raw = r.object(field, value, IDENTITY_CLAIMS);
  if (!raw) return undefined;
  if (!hasAnswer) return r.fail(field, 'invalid_value', 'needs an answer to read: declare connect.login or use type oauth2');
  const claims: NonNullable<IntegrationAuth['identity_claims']> = {};
  let ok = true;
  for (const claim of IDENTITY_CLAIMS) {
    if (raw[claim] === undefined) continue;
    const parsed = parseJsonPathExpression(raw[claim]);
    if (!parsed.ok) {
      r.fail(`${field}.${claim}`, 'invalid_jsonpath', `is not a supported JSONPath: it ${parsed.reason}`);
      ok = false;
    } else {
      claims[claim] = raw[claim] as string;
    }
  }
  return ok && Object.keys(claims).length > 0 ? claims : undefined;
}

function readOAuth2(r: FieldReader, field: string, value: unknown): IntegrationAuth['oauth2'] {
  const raw = r.object(field, value, ['authorization_url', 'token_url', 'scopes'], { required: true });
  if (!raw) return undefined;
  const authorizationUrl = readHttpUrl(r, `${field}.authorization_url`, raw.authorization_url, true);
  const tokenUrl = readHttpUrl(r, `${field}.token_url`, raw.token_url, true);
  const scopes = r.stringList(`${field}.scopes`, raw.scopes, {
    element: (path, scope) => (scope.length > 0 && !/\s/.test(scope)) || (r.fail(path, 'invalid_format', 'must be one scope without spaces'), false),
  });
  if (!authorizationUrl || !tokenUrl) return undefined;
  return withoutUndefined({ authorization_url: authorizationUrl, token_url: tokenUrl, scopes });
}

export function readHttpUrl(r: FieldReader, field: string, value: unknown, required = false): string | undefined {
  const text = r.string(field, value, { required });
  if (text === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return r.fail(field, 'invalid_format', 'must be an absolute http(s) URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return r.fail(field, 'invalid_format', 'must be an absolute http(s) URL');
  if (url.username || url.password) return r.fail(field, 'invalid_format', 'must not carry user information');
  return text;
}

interface ReadUri {
  text: string;
  field: string;
  pattern: AuthorizedUriPattern;
}

function readAuthorizedUris(r: FieldReader, field: string, value: unknown, literalOnly: boolean): ReadUri[] | undefined {
  const list = r.stringList(field, value, { required: literalOnly, min: literalOnly ? 1 : undefined });
  if (!list) return undefined;
  const out: ReadUri[] = [];
  list.forEach((text, i) => {
    const path = indexPath(field, i);
    const pattern = parseAuthorizedUri(text);
    if (typeof pattern === 'string') {
      r.fail(path, 'invalid_format', pattern);
    } else if (literalOnly && !pattern.literal) {
      r.fail(path, 'invalid_value', 'must be literal when connect is declared (no {$credential.<field>} template)');
    } else {
      out.push({ text, field: path, pattern });
    }
  });
  return out.length === list.length ? out : undefined;
}

function readLogin(
  r: FieldReader,
  field: string,
  value: unknown,
  formSchema: Record<string, unknown> | undefined,
  uris: ReadUri[] | undefined,
): { login: ConnectLogin; host: NamedHost } | undefined {
  const raw = r.object(field, value, ['request', 'success_criteria', 'outputs'], { required: true });
  if (!raw) return undefined;

  const requestField = `${field}.request`;
  const request = r.object(requestField, raw.request, ['method', 'url', 'content_type', 'body'], { required: true });
  let parsedRequest: ConnectLogin['request'] | undefined;
  let host: NamedHost | undefined;
  if (request) {
    const method = r.oneOf(`${requestField}.method`, request.method, LOGIN_METHODS, { required: true });
    const url = readHttpUrl(r, `${requestField}.url`, request.url, true);
    const contentType = r.string(`${requestField}.content_type`, request.content_type, { min: 1, max: 200 });
    const body = r.string(`${requestField}.body`, request.body, { max: 65536 });
    if (url !== undefined) {
      host = { host: new URL(url).hostname.toLowerCase(), field: `${requestField}.url` };
      if (uris && !uris.some((u) => matchesAuthorizedUri(u.text, url))) {
        r.fail(`${requestField}.url`, 'invalid_value', 'must fall under one of the auth\'s authorized_uris');
      }
    }
    if (body !== undefined) checkPlaceholders(r, `${requestField}.body`, body, formSchema);
    if (method && url !== undefined) parsedRequest = withoutUndefined({ method, url, content_type: contentType, body });
  }

  const criteria = readCriteria(r, `${field}.success_criteria`, raw.success_criteria);
  const outputs = readOutputs(r, `${field}.outputs`, raw.outputs);
  if (!parsedRequest || !host || !outputs || r.clean(`${field}.success_criteria`) === false) return undefined;
  return { login: withoutUndefined({ request: parsedRequest, success_criteria: criteria, outputs }), host };
}

/** {{field}} placeholders must name a field of the connect form. */
function checkPlaceholders(r: FieldReader, field: string, body: string, formSchema: Record<string, unknown> | undefined): void {
  const properties = formSchema && isJsonObject(formSchema.properties) ? Object.keys(formSchema.properties) : undefined;
  if (!properties) return;
  for (const [, name] of body.matchAll(PLACEHOLDER)) {
    if (!properties.includes(name)) {
      r.fail(field, 'invalid_value', `names {{${name}}}, which credentials.schema does not define`);
      return;
    }
  }
}

function readCriteria(r: FieldReader, field: string, value: unknown): Array<{ condition: string }> | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) return r.fail(field, 'invalid_type', 'must be an array');
  const out: Array<{ condition: string }> = [];
  value.forEach((item, i) => {
    const path = indexPath(field, i);
    const raw = r.object(path, item, ['condition'], { required: true });
    if (!raw) return;
    const condition = r.string(`${path}.condition`, raw.condition, { required: true, min: 1, max: 1000 });
    if (condition === undefined) return;
    const parsed = parseSuccessCriterion(condition);
    if (!parsed.ok) r.fail(`${path}.condition`, 'invalid_value', parsed.reason);
    else out.push({ condition });
  });
  return out;
}

function readOutputs(r: FieldReader, field: string, value: unknown): Record<string, LoginOutput> | undefined {
  const entries = r.map(field, value, { required: true });
  if (!entries) return undefined;
  if (entries.length === 0) return r.fail(field, 'out_of_range', 'must name at least one output: only outputs are stored');
  const outputs: Record<string, LoginOutput> = {};
  let ok = true;
  for (const [name, item, path] of entries) {
    const output = readOutput(r, path, name, item);
    if (output) outputs[name] = output;
    else ok = false;
  }
  return ok ? outputs : undefined;
}

function readOutput(r: FieldReader, path: string, name: string, value: unknown): LoginOutput | undefined {
  if (!OUTPUT_NAME.test(name)) return r.fail(path, 'invalid_key', 'must be a credential field name (letters, digits, "_")');
  if (!isJsonObject(value)) return r.fail(path, 'invalid_type', 'must be an object');
  const raw = value;
  const from = raw.from;
  if (from === 'cookie' || from === 'header') {
    r.onlyKeys(path, raw, ['from', 'name']);
    const source = r.string(`${path}.name`, raw.name, { required: true, pattern: HEADER_NAME, format: `a ${from} name` });
    return source === undefined ? undefined : { from, name: source };
  }
  if (from === 'body') {
    r.onlyKeys(path, raw, ['from', 'path']);
    const jsonPath = r.string(`${path}.path`, raw.path, { required: true });
    if (jsonPath === undefined) return undefined;
    if (!parseJsonPath(jsonPath)?.length) return r.fail(`${path}.path`, 'invalid_format', 'must be a JSON path such as data.token or items[0].id');
    return { from, path: jsonPath };
  }
  r.onlyKeys(path, raw, ['from', 'name', 'path']);
  if (from === undefined) return r.fail(`${path}.from`, 'invalid_union', 'is required: one of cookie, header, body');
  return r.fail(`${path}.from`, 'invalid_value', 'cannot be evaluated; use cookie, header or body');
}

function readDelivery(r: FieldReader, field: string, value: unknown, knownFields: string[] | undefined): IntegrationAuth['delivery'] {
  const raw = r.object(field, value, ['http', 'env']);
  if (!raw) return undefined;
  if (raw.http === undefined && raw.env === undefined) {
    r.fail(field, 'invalid_value', 'must declare http or env');
    return undefined;
  }
  const knownTemplate = (at: string, template: string | undefined) => {
    if (template === undefined || !knownFields) return;
    for (const [, ref] of template.matchAll(CREDENTIAL_REF)) {
      if (!knownFields.includes(ref)) {
        r.fail(at, 'invalid_value', `names {$credential.${ref}}, which this auth does not provide`);
        break;
      }
    }
  };
  const out: NonNullable<IntegrationAuth['delivery']> = {};
  if (raw.http !== undefined) {
    const httpField = `${field}.http`;
    const http = r.object(httpField, raw.http, ['in', 'name', 'prefix', 'value'], { required: true });
    if (http) {
      let where: 'header' | undefined;
      if (http.in === 'cookie') r.fail(`${httpField}.in`, 'invalid_value', 'must be header: cookie delivery is refused (only header delivery is supported)');
      else where = r.oneOf(`${httpField}.in`, http.in, ['header'] as const, { required: true });
      const name = r.string(`${httpField}.name`, http.name, { required: true, pattern: HEADER_NAME, format: 'an HTTP header name' });
      const prefix = r.string(`${httpField}.prefix`, http.prefix, { max: 200 });
      const template = r.string(`${httpField}.value`, http.value, { required: true, min: 1, max: 2000 });
      knownTemplate(`${httpField}.value`, template);
      if (where && name !== undefined && template !== undefined) out.http = withoutUndefined({ in: where, name, prefix, value: template });
    }
  }
  if (raw.env !== undefined) {
    const envField = `${field}.env`;
    const env = r.object(envField, raw.env, ['name', 'value'], { required: true });
    if (env) {
      const name = r.string(`${envField}.name`, env.name, { required: true, pattern: ENV_NAME, format: 'an environment variable name' });
      if (name !== undefined && RESERVED_ENV.has(name.toUpperCase())) {
        r.fail(`${envField}.name`, 'invalid_value', `${name} is set by the platform (the server's path, home or proxy)`);
      }
      const template = r.string(`${envField}.value`, env.value, { required: true, min: 1, max: 2000 });
      knownTemplate(`${envField}.value`, template);
      if (name !== undefined && !RESERVED_ENV.has(name.toUpperCase()) && template !== undefined) out.env = { name, value: template };
    }
  }
  return out.http || out.env ? out : undefined;
}

/** delivery.env names: a POSIX variable name */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** what a local server's runner sets itself: never a credential's */
const RESERVED_ENV = new Set(['PATH', 'HOME', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'ALL_PROXY', 'MCP_BRIDGE_CONFIG', 'NODE_OPTIONS']);
