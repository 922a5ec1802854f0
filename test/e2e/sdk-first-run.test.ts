// The SDK README's first run against a really started platform: the SDK is built from the
// platform's own document, the run executes in its sandbox on the scripted model, and the program
// waits for its ending and lists it through the SDK.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';
import { buildSdk, programUsingSdk, readmeFirstRun, runNode, SDK, typeCheckProgram } from '../support/sdk-build.ts';

let platform: PlatformProcess;
let fake: Awaited<ReturnType<typeof startFakeModel>>;
let dir: string;

before(async () => {
  fake = await startFakeModel();
  platform = await startPlatformProcess({ env: { SANDBOX_WARM_POOL: '1', EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
  dir = mkdtempSync(join(tmpdir(), 'sdk-e2e-'));
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await platform?.stop();
  await fake?.close();
});

test("the SDK README's first run succeeds on a started platform", async () => {
  const anon = client(platform.url);
  const redeem = await anon.post('/api/auth/bootstrap/redeem', {
    token: 'process-bootstrap-token-0123456789', email: 'owner@example.test', password: 'a long enough passphrase', name: 'Owner',
  });
  assert.equal(redeem.status, 201, redeem.text);
  const cookie = redeem.headers.get('set-cookie')!.split(';')[0];
  const keyRes = await client(platform.url, { cookie, org: redeem.body.org_id, space: redeem.body.space_id }).post('/api/api-keys', { name: 'sdk' });
  assert.equal(keyRes.status, 201, keyRes.text);
  const key = keyRes.body.key as string;
  await aDefaultModel(platform.url, key, fake.url);
  await importFixture(platform.url, key, 'agent-echo');

  const built = await buildSdk(dir, (await anon.get('/api/openapi.json')).text);
  assert.equal(built.code, 0, built.out);
  const program = programUsingSdk(dir, built.path, readmeFirstRun(readFileSync(join(SDK, 'README.md'), 'utf8')));
  const checked = await typeCheckProgram(program);
  assert.equal(checked.code, 0, checked.out);

  const ran = await runNode(program, ['--import', 'tsx', 'first-run.ts'], { BASE_URL: platform.url, API_KEY: key });
  assert.equal(ran.code, 0, `${ran.out}\n${platform.output().slice(-3000)}`);
  assert.match(ran.out, /^ended success \{"output":\{"echo":"[^"]+"\}\}$/m);
  assert.match(ran.out, /^listed run_\S+ success$/m);
});
