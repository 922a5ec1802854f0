// The README's first run, as `npm run demo` makes it against a started platform: bootstrap, an API
// key, the scripted model as provider and default model, the sample agent imported, a run that
// succeeds. Every call and answer is printed; the demo exits 0 only when the run succeeded. And the
// README's walkthrough by hand, pasted into a shell as written, gets to the same success.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { namedPort, startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
let platform: PlatformProcess;
let modelPort: number;

before(async () => {
  modelPort = await namedPort();
  platform = await startPlatformProcess({
    env: {
      // No configured token: the demo reads the one the platform generated in its data directory.
      BOOTSTRAP_TOKEN: '',
      EGRESS_ALLOW_INTERNAL_HOSTS: `127.0.0.1:${modelPort}`,
      SANDBOX_WARM_POOL: '1',
    },
  });
});
after(() => platform?.stop());

test('npm run demo goes from bootstrap to a successful run, printing each call and answer', async () => {
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    // An exported PORT (the platform's) must not move the demo's model server.
    PORT: new URL(platform.url).port,
  };
  const child = spawn('npm', ['run', '--silent', 'demo', '--', '--url', platform.url, '--data-dir', platform.dataDir, '--model-port', String(modelPort)], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  assert.equal(code, 0, `${out}\n--- platform ---\n${platform.output().slice(-3000)}`);

  const calls = [...out.matchAll(/^→ (GET|POST) (\S+)/gm)].map((m) => `${m[1]} ${m[2]!.replace(/run_[\w-]+/, 'run_*')}`);
  assert.deepEqual(calls.slice(0, 8), [
    'GET /health/ready',
    'POST /api/auth/bootstrap/redeem',
    'POST /api/api-keys',
    'POST /api/model-provider-credentials',
    'POST /api/models',
    'POST /api/packages/import',
    'POST /api/agents/@fixtures/agent-echo/run',
    'GET /api/runs/run_*?wait=30',
  ]);
  assert.match(out, /^← 201 \{"user_id":/m, 'answers are printed');
  assert.match(out, new RegExp(`"base_url":"http://127\\.0\\.0\\.1:${modelPort}/v1"`), 'the model server is on the chosen port, not PORT');
  assert.match(out, /The run run_\S+ succeeded\. Its result: \{"output":\{"echo":/);
  assert.doesNotMatch(out, /"password":"(?!…)/, 'the made-up passphrase is not printed');
});

test('the README walkthrough, pasted into sh, claims the instance and gets a successful run', async () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const block = /```sh\n(B=http:\/\/127\.0\.0\.1:3000\n[\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, 'the README has the walkthrough');
  const port = await namedPort();
  const own = await startPlatformProcess({ env: { BOOTSTRAP_TOKEN: '', EGRESS_ALLOW_INTERNAL_HOSTS: `127.0.0.1:${port}`, SANDBOX_WARM_POOL: '1' } });
  const model = await startFakeModel({ port });
  try {
    // Only where this platform and model listen differ from what a newcomer has.
    const script = block
      .replace('B=http://127.0.0.1:3000', `B=${own.url}`)
      .replace('.data/bootstrap-token', path.join(own.dataDir, 'bootstrap-token'))
      .replaceAll('127.0.0.1:11435', `127.0.0.1:${port}`);
    const work = fs.mkdtempSync(path.join(own.dataDir, 'shell-'));
    const child = spawn('sh', ['-e', '-c', `cd '${root}'\n${script.replace(/-c jar|-b jar/g, (m) => `${m.slice(0, 3)}'${work}/jar'`)}`], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    assert.equal(code, 0, `${out}\n--- platform ---\n${own.output().slice(-3000)}`);
    const run = JSON.parse(out.trim().split('\n').at(-1)!) as { status: string; result: { output: { echo: unknown } } };
    assert.equal(run.status, 'success', out);
    assert.equal(typeof run.result.output.echo, 'string');
    assert.equal(model.requests.length > 0, true, 'the run asked the scripted model');
  } finally {
    await model.close();
    await own.stop();
  }
});
