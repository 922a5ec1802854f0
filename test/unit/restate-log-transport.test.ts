// The engine SDK's log lines as the platform logs them: a run that failed ends its workflow with a
// failure on purpose, which is not worth a warning; other failures still are.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CancelledError } from '@restatedev/restate-sdk';
import { createLogger } from '../../lib/log.ts';
import { restateLogTransport } from '../../workflows/endpoint.ts';
import { RunEndedBadly } from '../../workflows/run-endings.ts';

function captured() {
  const lines: Array<{ level: string; msg: string }> = [];
  const log = createLogger('debug', 'test', (line) => lines.push(JSON.parse(line)));
  return { lines, transport: restateLogTransport(log) };
}

const params = { level: 'warn', replaying: false, source: 'JOURNAL' } as never;

test('a run ending as a failure, or a cancellation, is logged at debug', () => {
  const { lines, transport } = captured();
  transport(params, 'Error when processing a Restate context operation.\n', new RunEndedBadly('failed', 'sandbox_lost'));
  transport(params, 'Error when processing a Restate context operation.\n', new CancelledError());
  assert.deepEqual(lines.map((l) => l.level), ['debug', 'debug']);
});

test('any other failure keeps its level', () => {
  const { lines, transport } = captured();
  transport(params, 'Error when processing a Restate context operation.\n', new Error('database unreachable'));
  transport({ ...(params as object), level: 'error' } as never, 'Error while handling request', new Error('boom'));
  assert.deepEqual(lines.map((l) => l.level), ['warn', 'error']);
});
