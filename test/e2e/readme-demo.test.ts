// The README's first run, as `npm run demo` makes it against a started platform: bootstrap, an API
// key, the scripted model as provider and default model, the sample agent imported, a run that
// succeeds with the sample's promised output. Every call and answer is printed, and the owner's
// password, with which the demo organization can be signed into; the demo exits 0 only when the
// run succeeded. And the walkthrough by hand (docs/integrators.md), pasted into a shell as written:
// on the instance the demo just claimed it stops at its first step, showing that answer and calling
// nothing more (on an unclaimed instance, test/e2e/docs-blocks.test.ts runs it to the echo).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
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
  assert.match(out, /The run run_\S+ succeeded\. Its result: \{"output":\{"echo":"hello"\}\}/);
  assert.doesNotMatch(out, /"password":"(?!…)/, 'the passphrase is not echoed inside a request body');
  const password = /^Sign in to the demo organization as demo@example\.com with the password: (\S+)$/m.exec(out)?.[1];
  assert.ok(password, out);
  const signedIn = await fetch(`${platform.url}/api/auth/sign-in/email`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'demo@example.com', password }),
  });
  assert.equal(signedIn.status, 200, await signedIn.text());
  // the OpenID provider loaded (discovery), the platform has said nothing a newcomer must wonder about
  assert.equal((await fetch(`${platform.url}/.well-known/openid-configuration`)).status, 200);
  assert.doesNotMatch(platform.output(), /Unsupported runtime|EBADENGINE/);
});

/** The first run by hand (docs/integrators.md), as a newcomer pastes it, where this platform and model listen. */
function walkthrough(on: PlatformProcess, modelPort: number): string {
  const readme = fs.readFileSync(path.join(root, 'docs/integrators.md'), 'utf8');
  const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('/api/auth/bootstrap/redeem'));
  assert.ok(block, 'docs/integrators.md has the walkthrough');
  // Only where this platform and model listen differ from what a newcomer has.
  return block
    .replace('B=http://127.0.0.1:3000', `B=${on.url}`)
    .replace('.data/bootstrap-token', path.join(on.dataDir, 'bootstrap-token'))
    .replaceAll('127.0.0.1:11435', `127.0.0.1:${modelPort}`);
}

/** Pastes the script into sh from the repository folder, as the README says; its temporary files go to tmp. */
async function paste(script: string, tmp: string): Promise<{ code: number | null; out: string }> {
  const child = spawn('sh', ['-c', `cd '${root}'\n${script}`], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', TMPDIR: tmp },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  return { code, out };
}


test('the walkthrough of docs/integrators.md pasted after npm run demo, on the same instance: it stops at the claim, showing the 410', async () => {
  const tmp = fs.mkdtempSync(path.join(platform.dataDir, 'paste-'));
  const { code, out } = await paste(walkthrough(platform, modelPort), tmp);
  assert.notEqual(code, 0, out);
  assert.match(out, /^POST \/api\/auth\/bootstrap\/redeem answered 410: \{.*"code":"bootstrap_token_unavailable"/m, out);
  assert.doesNotMatch(out, /answered 401|API key:/, 'nothing is called after the failing step');
  assert.deepEqual(fs.readdirSync(tmp), [], 'the cookie file is removed');
});

// The walkthrough on an unclaimed instance, getting to the echo, is run by test/e2e/docs-blocks.test.ts
// with every other command of the guides, on the platform it shares with them.
