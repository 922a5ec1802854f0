import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isProblem, type FieldError } from '../../lib/problem.ts';
import { parseManifest, type IntegrationManifest } from '../../lib/afps/manifest.ts';
import { codesByField, manifestErrors, MANIFEST_OPTS } from '../support/manifest-errors.ts';

const OPTS = MANIFEST_OPTS;

function anIntegration(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: '@acme/crm', version: '1.0.0', type: 'integration', source: { kind: 'none' }, ...extra };
}

const FORM = { type: 'object', properties: { username: { type: 'string' }, password: { type: 'string' } } };

function aLoginAuth(login: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'custom',
    credentials: { schema: FORM },
    connect: {
      login: {
        request: { method: 'POST', url: 'https://app.example.com/login', content_type: 'application/json', body: '{"u":"{{username}}","p":"{{password}}"}' },
        success_criteria: [{ condition: 'status == 200' }],
        outputs: { session: { from: 'cookie', name: 'sid' } },
        ...login,
      },
    },
    authorized_uris: ['https://app.example.com/*'],
    delivery: { http: { in: 'header', name: 'Cookie', prefix: 'sid=', value: '{$credential.session}' } },
    ...extra,
  };
}


const LOGIN = 'auths.session.connect.login';

describe('manifest: integration source', () => {
  test('source is required; its kind is none, local or remote', () => {
    assert.deepEqual(codesByField({ name: '@acme/crm', version: '1.0.0', type: 'integration' }), { source: 'required' });
    assert.deepEqual(codesByField(anIntegration({ source: {} })), { 'source.kind': 'invalid_union' });
    assert.deepEqual(codesByField(anIntegration({ source: { kind: 'api' } })), { 'source.kind': 'invalid_value' });
    assert.deepEqual(codesByField(anIntegration({ source: { kind: 'none', url: 'https://x' } })), { 'source.url': 'unknown_field' });
  });

  test('a remote source needs an http(s) url and the streamable-http or sse transport', () => {
    const remote = { kind: 'remote', url: 'https://mcp.example.com/mcp', transport: 'streamable-http' };
    assert.deepEqual((parseManifest(anIntegration({ source: remote }), OPTS) as IntegrationManifest).source, remote);
    assert.doesNotThrow(() => parseManifest(anIntegration({ source: { ...remote, transport: 'sse' } }), OPTS));
    assert.deepEqual(codesByField(anIntegration({ source: { kind: 'remote' } })), { 'source.url': 'required', 'source.transport': 'required' });
    assert.deepEqual(codesByField(anIntegration({ source: { ...remote, url: 'ftp://x.example.com', transport: 'stdio' } })), {
      'source.url': 'invalid_format', 'source.transport': 'invalid_value',
    });
  });

  test('a local source names an mcp-server package or a command, not both', () => {
    const byPackage = { kind: 'local', server: { name: '@acme/fetch', version: '^1.0.0' } };
    const byCommand = { kind: 'local', command: ['npx', '-y', 'some-server', '-y'], image: 'node:20-slim', env: { LOG_LEVEL: 'info' } };
    assert.doesNotThrow(() => parseManifest(anIntegration({ source: byPackage }), OPTS));
    assert.doesNotThrow(() => parseManifest(anIntegration({ source: byCommand }), OPTS));
    assert.deepEqual(codesByField(anIntegration({ source: { kind: 'local' } })), { source: 'invalid_value' });
    assert.deepEqual(codesByField(anIntegration({ source: { ...byPackage, command: ['x'] } })), { source: 'invalid_value' });
    assert.deepEqual(codesByField(anIntegration({ source: { kind: 'local', command: [] } })), { 'source.command': 'out_of_range' });
    assert.deepEqual(codesByField(anIntegration({ source: { kind: 'local', server: { name: 'fetch', version: 'not a range' } } })), {
      'source.server.name': 'invalid_format', 'source.server.version': 'invalid_format',
    });
    assert.deepEqual(codesByField(anIntegration({ source: { ...byCommand, env: { 'bad-name': 'x' } } })), { 'source.env.bad-name': 'invalid_key' });
  });

  test('default_tools is a list of distinct tool names', () => {
    assert.doesNotThrow(() => parseManifest(anIntegration({ default_tools: ['api_call', 'list_items'] }), OPTS));
    assert.deepEqual(codesByField(anIntegration({ default_tools: ['a', 'a'] })), { 'default_tools[1]': 'invalid_element' });
  });
});

describe('manifest: integration auths', () => {
  test('an API key auth with header delivery is accepted', () => {
    const auth = {
      type: 'api_key',
      credentials: { schema: { type: 'object', properties: { api_key: { type: 'string' } } } },
      authorized_uris: ['https://api.example.com/*', 'https://{$credential.region}.api.example.com/v1/*'],
      delivery: { http: { in: 'header', name: 'X-Api-Key', value: '{$credential.api_key}' } },
    };
    const parsed = parseManifest(anIntegration({ auths: { api_key: auth } }), OPTS) as IntegrationManifest;
    assert.deepEqual(parsed.auths?.api_key, auth);
  });

  test('auth keys, types and unknown members', () => {
    assert.deepEqual(codesByField(anIntegration({ auths: { 'Bad Key': { type: 'api_key' } } })), { 'auths["Bad Key"]': 'invalid_key' });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: {} } })), { 'auths.a.type': 'required' });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: { type: 'kerberos' } } })), { 'auths.a.type': 'invalid_value' });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: { type: 'basic', allow_all_uris: true } } })), { 'auths.a.allow_all_uris': 'unknown_field' });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: { type: 'custom', credentials: { schema: { type: 'nope' } } } } })), {
      'auths.a.credentials.schema': 'invalid_value',
    });
  });

  test('delivery.http.in is header only: cookie is refused', () => {
    const delivery = (where: string) => ({ http: { in: where, name: 'token', value: 'x' } });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: { type: 'api_key', delivery: delivery('cookie') } } })), { 'auths.a.delivery.http.in': 'invalid_value' });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: { type: 'api_key', delivery: delivery('query') } } })), { 'auths.a.delivery.http.in': 'invalid_value' });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: { type: 'api_key', delivery: { http: { name: 'X', value: 'v' } } } } })), { 'auths.a.delivery.http.in': 'required' });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: { type: 'api_key', delivery: { http: { in: 'header', name: 'Bad Header', value: 'v' } } } } })), {
      'auths.a.delivery.http.name': 'invalid_format',
    });
  });

  test('delivery.env (the extension for local servers) names a variable and a value from the credential; the runner\'s own variables are refused', () => {
    const credentials = { schema: { type: 'object', properties: { api_key: { type: 'string' } } } };
    const auth = { type: 'api_key', credentials, delivery: { env: { name: 'VENDOR_API_KEY', value: '{$credential.api_key}' } } };
    assert.deepEqual((parseManifest(anIntegration({ auths: { a: auth } }), OPTS) as IntegrationManifest).auths?.a.delivery, auth.delivery);
    const env = (name: string, value = '{$credential.api_key}') => ({ type: 'api_key', credentials, delivery: { env: { name, value } } });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: env('https_proxy') } })), { 'auths.a.delivery.env.name': 'invalid_value' });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: env('PATH') } })), { 'auths.a.delivery.env.name': 'invalid_value' });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: env('1BAD') } })), { 'auths.a.delivery.env.name': 'invalid_format' });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: env('KEY', '{$credential.token}') } })), { 'auths.a.delivery.env.value': 'invalid_value' });
    assert.deepEqual(codesByField(anIntegration({ auths: { a: { type: 'api_key', credentials, delivery: {} } } })), { 'auths.a.delivery': 'invalid_value' });
  });

  test('a delivery may only name credential fields the auth provides', () => {
    const credentials = { schema: { type: 'object', properties: { api_key: { type: 'string' } } } };
    const delivery = { http: { in: 'header', name: 'Authorization', value: '{$credential.token}' } };
    assert.deepEqual(codesByField(anIntegration({ auths: { a: { type: 'api_key', credentials, delivery } } })), { 'auths.a.delivery.http.value': 'invalid_value' });
    // with a login only the outputs are stored: the password cannot be delivered
    assert.deepEqual(codesByField(anIntegration({
      auths: { session: aLoginAuth({}, { delivery: { http: { in: 'header', name: 'X-Pass', value: '{$credential.password}' } } }) },
    })), { 'auths.session.delivery.http.value': 'invalid_value' });
  });

  test('authorized_uris are http(s) URL patterns with a path', () => {
    const auth = (uris: unknown) => ({ a: { type: 'api_key', authorized_uris: uris } });
    assert.deepEqual(codesByField(anIntegration({ auths: auth(['https://api.example.com']) })), { 'auths.a.authorized_uris[0]': 'invalid_format' });
    assert.deepEqual(codesByField(anIntegration({ auths: auth(['ftp://api.example.com/*']) })), { 'auths.a.authorized_uris[0]': 'invalid_format' });
    assert.deepEqual(codesByField(anIntegration({ auths: auth(['https://user@api.example.com/*']) })), { 'auths.a.authorized_uris[0]': 'invalid_format' });
    assert.deepEqual(codesByField(anIntegration({ auths: auth(['https://api.example.com/{oops}']) })), { 'auths.a.authorized_uris[0]': 'invalid_format' });
    assert.doesNotThrow(() => parseManifest(anIntegration({ auths: auth(['https://*.example.com/*', 'http://127.0.0.1:8080/api/*']) }), OPTS));
  });

  test('oauth2 auths carry their endpoints', () => {
    const oauth2 = { authorization_url: 'https://id.example.com/authorize', token_url: 'https://id.example.com/token', scopes: ['read', 'write'] };
    assert.doesNotThrow(() => parseManifest(anIntegration({ auths: { oauth: { type: 'oauth2', oauth2 } } }), OPTS));
    assert.deepEqual(codesByField(anIntegration({ auths: { oauth: { type: 'oauth2' } } })), { 'auths.oauth.oauth2': 'required' });
    assert.deepEqual(codesByField(anIntegration({ auths: { key: { type: 'api_key', oauth2 } } })), { 'auths.key.oauth2': 'invalid_value' });
  });
});

describe('manifest: connect.login', () => {
  test('a login with criteria and a cookie output is accepted', () => {
    const auth = aLoginAuth();
    const parsed = parseManifest(anIntegration({ auths: { session: auth } }), OPTS) as IntegrationManifest;
    assert.deepEqual(parsed.auths?.session, auth);
  });

  test('a compound success criterion is refused at its own path', () => {
    for (const condition of ["status == 200 && body.ok == true", 'status == 200 || status == 201', "body.ok == true and status == 200", "status == 200 or body.ok == true"]) {
      const errors = manifestErrors(anIntegration({ auths: { session: aLoginAuth({ success_criteria: [{ condition: 'status == 200' }, { condition }] }) } }));
      assert.deepEqual(errors.map((e) => [e.field, e.code]), [[`${LOGIN}.success_criteria[1].condition`, 'invalid_value']], condition);
      assert.match(errors[0].message, /compound/);
    }
  });

  test('unquoted strings, xpath and regexes that do not compile are refused', () => {
    const cases: Array<[string, RegExp]> = [
      ['body.status == ok', /unquoted string/],
      ['body.status == "ok"', /single quotes/],
      ["//div[@id='ok'] == 'yes'", /xpath/],
      ["xpath(/html/body) == 'x'", /xpath/],
      ['header.Location == /dash(board/', /does not compile/],
      ["status == '200'", /HTTP status number/],
      ['status != 200', /only == is supported/],
      ['status', /one comparison/],
    ];
    for (const [condition, reason] of cases) {
      const errors = manifestErrors(anIntegration({ auths: { session: aLoginAuth({ success_criteria: [{ condition }] }) } }));
      assert.equal(errors.length, 1, condition);
      assert.equal(errors[0].field, `${LOGIN}.success_criteria[0].condition`);
      assert.match(errors[0].message, reason, condition);
    }
  });

  test('criteria are optional (any 2xx), but each must be an object holding only condition', () => {
    assert.doesNotThrow(() => parseManifest(anIntegration({ auths: { session: aLoginAuth({ success_criteria: undefined }) } }), OPTS));
    assert.deepEqual(codesByField(anIntegration({ auths: { session: aLoginAuth({ success_criteria: [{ condition: 'status == 200', regex: 'x' }] }) } })), {
      [`${LOGIN}.success_criteria[0].regex`]: 'unknown_field',
    });
  });

  test('outputs are required and must be extractions that can be evaluated', () => {
    assert.deepEqual(codesByField(anIntegration({ auths: { session: aLoginAuth({ outputs: undefined }) } })), {
      [`${LOGIN}.outputs`]: 'required'
    });
    assert.deepEqual(codesByField(anIntegration({ auths: { session: aLoginAuth({ outputs: { session: { from: 'xpath', name: '//a' } } }) } })), {
      [`${LOGIN}.outputs.session.from`]: 'invalid_value'
    });
    assert.deepEqual(codesByField(anIntegration({ auths: { session: aLoginAuth({ outputs: { session: { from: 'cookie' } } }) } })), {
      [`${LOGIN}.outputs.session.name`]: 'required'
    });
    assert.doesNotThrow(() => parseManifest(anIntegration({
      auths: { session: aLoginAuth({ outputs: { session: { from: 'body', path: 'data.token' }, csrf: { from: 'header', name: 'X-Csrf' } } }) },
    }), OPTS));
    assert.deepEqual(codesByField(anIntegration({ auths: { session: aLoginAuth({ outputs: { session: { from: 'body', path: '$..token' } } }) } })), {
      [`${LOGIN}.outputs.session.path`]: 'invalid_format'
    });
  });

  test('authorized_uris must be literal when connect is declared', () => {
    const errors = codesByField(anIntegration({
      auths: { session: aLoginAuth({}, { authorized_uris: ['https://{$credential.tenant}.example.com/*'] }) },
    }));
    assert.equal(errors['auths.session.authorized_uris[0]'], 'invalid_value');
    assert.deepEqual(codesByField(anIntegration({ auths: { session: aLoginAuth({}, { authorized_uris: undefined }) } })), {
      'auths.session.authorized_uris': 'required',
    });
  });

  test('the login URL must fall under authorized_uris, on the integration\'s one host', () => {
    const request = { method: 'POST', url: 'https://login.other.example/session' };
    assert.deepEqual(codesByField(anIntegration({ auths: { session: aLoginAuth({ request }) } })), {
      [`${LOGIN}.request.url`]: 'invalid_value',
    });
    const twoHosts = aLoginAuth({}, { authorized_uris: ['https://app.example.com/*', 'https://files.example.com/*'] });
    assert.deepEqual(codesByField(anIntegration({ auths: { session: twoHosts } })), { 'auths.session.authorized_uris[1]': 'invalid_value' });
  });

  test('the login request is one request with a known method and fields of the connect form', () => {
    assert.deepEqual(codesByField(anIntegration({ auths: { session: aLoginAuth({ request: { method: 'DELETE', url: 'https://app.example.com/login' } }) } })), {
      [`${LOGIN}.request.method`]: 'invalid_value',
    });
    assert.deepEqual(codesByField(anIntegration({ auths: { session: aLoginAuth({ request: { method: 'POST', url: 'https://app.example.com/login', body: 'u={{user}}' } }) } })), {
      [`${LOGIN}.request.body`]: 'invalid_value',
    });
    assert.deepEqual(codesByField(anIntegration({ auths: { session: aLoginAuth({}, { credentials: undefined }) } })), {
      'auths.session.credentials': 'required',
    });
  });
});

describe('manifest: identity_claims', () => {
  const claimsProblem = (claims: unknown, extra: Record<string, unknown> = {}) => {
    try {
      parseManifest(anIntegration({ auths: { session: aLoginAuth({}, { identity_claims: claims, ...extra }) } }), OPTS);
    } catch (err) {
      if (isProblem(err)) return err;
      throw err;
    }
    return undefined;
  };

  test('expressions of the JSONPath subset are kept as written', () => {
    const claims = { account_id: '$.user.id', label: "$['user']['names'][0]" };
    const parsed = parseManifest(anIntegration({ auths: { session: aLoginAuth({}, { identity_claims: claims }) } }), OPTS) as IntegrationManifest;
    assert.deepEqual(parsed.auths?.session.identity_claims, claims);
  });

  test('an expression outside the subset is invalid_config naming the field; every other fault is still listed', () => {
    const bad = claimsProblem({ account_id: '$..id', label: '$.ok' });
    assert.equal(bad?.code, 'invalid_config');
    assert.equal(bad?.status, 400);
    assert.deepEqual(bad?.errors?.map((e: FieldError) => [e.field, e.code]), [['auths.session.identity_claims.account_id', 'invalid_jsonpath']]);
    const both = claimsProblem({ label: 7 }, { delivery: { http: { in: 'cookie', name: 'sid', value: 'x' } } });
    assert.equal(both?.code, 'invalid_config');
    assert.deepEqual(both?.errors?.map((e: FieldError) => e.field).sort(), ['auths.session.delivery.http.in', 'auths.session.identity_claims.label']);
  });

  test('other faults of identity_claims are manifest faults', () => {
    assert.equal(claimsProblem({ email: '$.email' })?.code, 'invalid_manifest');
    assert.equal(claimsProblem('$.user.id')?.code, 'invalid_manifest');
    assert.deepEqual(codesByField(anIntegration({ auths: { key: { type: 'api_key', identity_claims: { account_id: '$.id' } } } })), {
      'auths.key.identity_claims': 'invalid_value',
    });
  });
});
