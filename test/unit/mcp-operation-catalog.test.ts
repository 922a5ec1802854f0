// The operations the MCP endpoint offers, read from an OpenAPI document: only credentialed ones
// (never public documents, sign-in or the endpoint itself), ranked by the query's words, and
// described with every component their schemas reach.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { catalogOf, describeOperation, searchOperations } from '../../api/modules/mcp/catalog.ts';

const secured = [{ bearer: [] }, { session: [] }];
const DOCUMENT = {
  paths: {
    '/api/runs': { get: { operationId: 'get_api_runs', summary: 'List runs', tags: ['Runs'], security: secured, 'x-permission': 'runs:read' } },
    '/api/runs/{id}': {
      get: {
        operationId: 'get_api_runs_id', summary: 'Read a run', tags: ['Runs'], security: secured, 'x-permission': 'runs:read',
        parameters: [{ name: 'id', in: 'path' }],
        responses: { 200: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Run' } } } } },
      },
      delete: { operationId: 'delete_api_runs_id', summary: 'Delete a run', tags: ['Runs'], security: secured, 'x-permission': 'runs:delete', 'x-rate-limit-per-minute': 60 },
    },
    '/api/spaces': { get: { operationId: 'get_api_spaces', summary: 'List spaces', tags: ['Spaces'], security: secured } },
    '/api/openapi.json': { get: { operationId: 'get_api_openapi_json', summary: 'The OpenAPI document', security: [] } },
    '/api/auth/sign-in/email': { post: { operationId: 'post_api_auth_sign_in_email', summary: 'Sign in', security: [] } },
    '/api/mcp/o/{org}': { post: { operationId: 'post_api_mcp_o_org', summary: 'The MCP endpoint', security: secured } },
  },
  components: {
    schemas: {
      Run: { type: 'object', properties: { error: { $ref: '#/components/schemas/RunError' } } },
      RunError: { type: 'object', properties: { code: { type: 'string' } } },
      Unused: { type: 'object' },
    },
  },
};

test('only operations that take a credential are offered, never the MCP endpoint itself', () => {
  const catalog = catalogOf(DOCUMENT);
  assert.deepEqual(catalog.operations.map((o) => o.operation_id).sort(), ['delete_api_runs_id', 'get_api_runs', 'get_api_runs_id', 'get_api_spaces']);
});

test('search ranks by how many words match and lists everything for an empty query', () => {
  const catalog = catalogOf(DOCUMENT);
  const found = searchOperations(catalog, 'delete run', 10);
  assert.equal(found.operations[0].operation_id, 'delete_api_runs_id', 'both words');
  assert.ok(!found.operations.some((o) => o.operation_id === 'get_api_spaces'), 'no word matches');
  assert.equal(searchOperations(catalog, '', 10).total, 4);
  assert.equal(searchOperations(catalog, '', 2).operations.length, 2);
  assert.equal(searchOperations(catalog, 'runs:delete', 10).operations[0].permission, 'runs:delete');
});

test('a description carries the operation\'s schemas and every component they reach, and no other', () => {
  const catalog = catalogOf(DOCUMENT);
  const described = describeOperation(catalog, catalog.byId.get('get_api_runs_id')!);
  assert.equal(described.path, '/api/runs/{id}');
  assert.deepEqual(described.parameters, [{ name: 'id', in: 'path' }]);
  assert.deepEqual(Object.keys(described.components).sort(), ['#/components/schemas/Run', '#/components/schemas/RunError']);
  assert.equal(describeOperation(catalog, catalog.byId.get('delete_api_runs_id')!).rate_limit_per_minute, 60);
});
