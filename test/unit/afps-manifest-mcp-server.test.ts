import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isProblem } from '../../lib/problem.ts';
import { parseManifest, type McpServerManifest } from '../../lib/afps/manifest.ts';

const OPTS = { timeoutCeilingSeconds: 1800 };

function anMcpServer(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: '@acme/fetch', version: '1.0.0', type: 'mcp-server', server: { command: ['node', 'server/index.js'] }, ...extra };
}

function codesByField(raw: unknown): Record<string, string> {
  try {
    parseManifest(raw, OPTS);
  } catch (err) {
    if (isProblem(err) && err.code === 'invalid_manifest') return Object.fromEntries((err.errors ?? []).map((e) => [e.field, e.code]));
    throw err;
  }
  return assert.fail('expected invalid_manifest');
}

describe('manifest: mcp-server members', () => {
  test('server.command is the argv that starts the stdio server; env is optional', () => {
    const parsed = parseManifest(anMcpServer({ server: { command: ['node', 'a.js', '--x', '--x'], env: { DEBUG: '1' } } }), OPTS) as McpServerManifest;
    assert.deepEqual(parsed.server, { command: ['node', 'a.js', '--x', '--x'], env: { DEBUG: '1' } });
  });

  test('server and its command are required; unknown members are refused', () => {
    assert.deepEqual(codesByField(anMcpServer({ server: undefined })), { server: 'required' });
    assert.deepEqual(codesByField(anMcpServer({ server: {} })), { 'server.command': 'required' });
    assert.deepEqual(codesByField(anMcpServer({ server: { command: [] } })), { 'server.command': 'out_of_range' });
    assert.deepEqual(codesByField(anMcpServer({ server: { command: ['node', ''] } })), { 'server.command[1]': 'out_of_range' });
    assert.deepEqual(codesByField(anMcpServer({ server: { command: ['node'], cwd: '/' } })), { 'server.cwd': 'unknown_field' });
    assert.deepEqual(codesByField(anMcpServer({ server: { command: ['node'], env: { PORT: 8080 } } })), { 'server.env.PORT': 'invalid_type' });
  });
});
