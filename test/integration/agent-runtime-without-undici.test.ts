// A whole run of the agent runtime, started from its startup snapshot as the process backend
// starts it, never loads node's undici (nor the HTTP/2 and TLS clients it brings), nor node's http
// client: loading undici was half the CPU of a trivial run (agent-runtime/fetch-headers.ts), and
// node:http costs about twice what the runtime's own client on node:net does (sidecar-http.ts).
// The run is the platform's rehearsal (activities/sandbox/rehearsal.ts): a scripted model asking
// for a log call, an output call and a final answer, through a real sidecar. A script node preloads (-r) into the runtime
// notes, as the process exits, its exit code and the built-in modules it loaded.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: a plain ESM script without type declarations
import { ensureBundle } from '../../bin/start.mjs';
import { sandboxNodePath } from '../../activities/sandbox/confinement.ts';
import { rehearsePair } from '../../activities/sandbox/rehearsal.ts';
import { agentSnapshotArgv } from '../../activities/sandbox/startup-snapshot.ts';
import { REPO } from './sidecar-run-harness.ts';

const FLAGS = ['--max-old-space-size=160', '--max-semi-space-size=1'];

describe('the agent runtime over a whole run', () => {
  let dir: string;
  before(async () => {
    await ensureBundle();
    dir = await mkdtemp(join(tmpdir(), 'runtime-without-undici-'));
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("started from its snapshot, it completes a run without loading undici, HTTP/2, TLS or node's http client", async () => {
    const node = sandboxNodePath();
    const snapshot = await agentSnapshotArgv(REPO, node, FLAGS);
    assert.ok(snapshot, 'the startup snapshot was built');
    const noted = join(dir, 'modules.json');
    const probe = join(dir, 'probe.cjs');
    await writeFile(probe, `process.on('exit', (code) => require('node:fs').writeFileSync(${JSON.stringify(noted)}, JSON.stringify({ code, modules: process.moduleLoadList })));\n`);
    await rehearsePair(node, { sidecar: [join(REPO, 'dist', 'sidecar.cjs')], agent: [...snapshot, '-r', probe] });
    const { code, modules } = JSON.parse(await readFile(noted, 'utf8')) as { code: number; modules: string[] };
    assert.equal(code, 0, 'the runtime reported its outcome to the sidecar and ended');
    assert.ok(modules.includes('NativeModule net'), 'the list is the runtime\'s');
    assert.deepEqual(modules.filter((m) => /undici|http2|\btls\b|_tls_|NativeModule https?$|_http_/.test(m)), []);
  });
});
