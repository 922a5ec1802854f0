// Without an OTLP endpoint nothing of OpenTelemetry is loaded, whatever of the platform is; with
// one, the SDK is loaded on start and a log line written inside a span carries its ids.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { root } from '../support/embedded-platform.ts';

function probe(env: Record<string, string>): { started: boolean; hostLoaded: boolean; files: string[]; inside?: { trace_id: string; span_id: string }; lines: string[] } {
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'test/fixtures/tracing-load-probe.ts', JSON.stringify(env)], {
    cwd: root, encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' },
  });
  return JSON.parse(out);
}

test('with no OTEL variables the platform loads no @opentelemetry module and logs no trace ids', () => {
  const off = probe({ OTEL_EXPORTER_OTLP_ENDPOINT: '' });
  assert.equal(off.hostLoaded, true);
  assert.equal(off.started, false);
  assert.deepEqual(off.files, []);
  assert.equal(off.inside, undefined);
  for (const line of off.lines) assert.ok(!('trace_id' in JSON.parse(line)), line);
});

test('with an endpoint the SDK is loaded and a line written inside a span carries trace_id and span_id', () => {
  // nothing listens on port 9 (discard): the export fails quietly and the stop does not wait for it
  const on = probe({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
  assert.equal(on.started, true);
  assert.ok(on.files.some((f) => f.includes('/@opentelemetry/sdk-trace-base/')), on.files.join('\n'));
  assert.ok(on.inside, 'a span was active');
  const [inside, outside] = on.lines.map((l) => JSON.parse(l));
  assert.equal(inside.msg, 'inside a span');
  assert.equal(inside.trace_id, on.inside!.trace_id);
  assert.equal(inside.span_id, on.inside!.span_id);
  assert.match(inside.trace_id, /^[0-9a-f]{32}$/);
  assert.equal(outside.msg, 'outside any span');
  assert.ok(!('trace_id' in outside));
});
