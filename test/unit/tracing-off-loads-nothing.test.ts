// Without an OTLP endpoint nothing of OpenTelemetry is loaded, whatever of the platform is; with
// one, the SDK is loaded on start and a log line written inside a span carries its ids. One child
// process, both in turn (off first: once loaded, a module stays loaded).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { before, test } from 'node:test';
import { root } from '../support/embedded-platform.ts';

interface Phase { started: boolean; files: string[]; inside?: { trace_id: string; span_id: string }; lines: string[] }
let result: { hostLoaded: boolean; off: Phase; on: Phase };

before(() => {
  const off = { OTEL_EXPORTER_OTLP_ENDPOINT: '' };
  // nothing listens on port 9 (discard): the export fails quietly and the stop does not fail with it
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'test/fixtures/tracing-load-probe.ts', JSON.stringify(off), JSON.stringify(on)], {
    cwd: root, encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' },
  });
  result = JSON.parse(out);
});

test('with no OTEL variables the platform loads no @opentelemetry module and logs no trace ids', () => {
  assert.equal(result.hostLoaded, true);
  assert.equal(result.off.started, false);
  assert.deepEqual(result.off.files, []);
  assert.equal(result.off.inside, undefined);
  assert.equal(result.off.lines.length, 2);
  for (const line of result.off.lines) assert.ok(!('trace_id' in JSON.parse(line)), line);
});

test('with an endpoint the SDK is loaded and a line written inside a span carries trace_id and span_id', () => {
  const { on } = result;
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
