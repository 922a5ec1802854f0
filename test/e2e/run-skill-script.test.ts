// A skill that works, end to end on a really started platform: a skill package whose SKILL.md says
// to run scripts/count.sh is imported, an agent declaring it is imported and launched, and the
// scripted model reads SKILL.md and runs the script with the shell tool (under bubblewrap where
// it is installed); the script's answer is the run's output. A declared skill that is not in the
// space is missing_skill at launch. The whole path of files: an uploaded input file is counted by
// the skill's script and the result, written in the workspace, is published with publish_file and
// read back as a durable file of the run.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { findBubblewrap } from '../../activities/sandbox/confinement.ts';
import { writeZip } from '../../lib/zip/write-zip.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importPackage } from '../support/runs.ts';

let platform: PlatformProcess;
let fake: Awaited<ReturnType<typeof startFakeModel>>;

const zip = (files: Record<string, string>) => writeZip(Object.entries(files).map(([name, text]) => [name, Buffer.from(text)]));

const SKILL = zip({
  'manifest.json': JSON.stringify({ name: '@acme/word-count', version: '1.0.0', type: 'skill', schema_version: '0.3', description: 'Counts words' }),
  'SKILL.md': '---\nname: word-count\ndescription: Counts the words of a text file\n---\nRun `bash skills/word-count/scripts/count.sh <file>`: it prints the number of words.\n',
  'scripts/count.sh': '#!/bin/sh\nwc -w < "$1" | tr -d " "\n',
});

const steps = [
  { tool: 'workspace_read', arguments: { path: 'skills/word-count/SKILL.md' } },
  { tool: 'workspace_bash', arguments: { command: 'bash skills/word-count/scripts/count.sh data/words.txt; test -e /etc/passwd; echo "etc=$?"' } },
  { tool: 'output', arguments: { result: '{{result:1}}' } },
];

function agent(name: string, skills: Record<string, string>): Buffer {
  return zip({
    'manifest.json': JSON.stringify({
      name, version: '1.0.0', type: 'agent', schema_version: '0.3', timeout: 120,
      dependencies: { skills },
      output: { schema: { type: 'object', properties: { result: { type: 'string' } }, required: ['result'], additionalProperties: false } },
      runtime_tools: ['output'],
    }),
    'prompt.md': `Count the words of data/words.txt with the word-count skill.\n\n\`\`\`fake-model-script\n${JSON.stringify(steps)}\n\`\`\`\n`,
    'data/words.txt': 'one two three\nfour five\n',
  });
}

before(async () => {
  fake = await startFakeModel();
  platform = await startPlatformProcess({ env: { SANDBOX_WARM_POOL: '1', EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
});
after(async () => {
  await platform?.stop();
  await fake?.close();
});

let api: ReturnType<typeof client>;
let key: string;

async function owner(): Promise<void> {
  if (api) return;
  const anon = client(platform.url);
  const redeem = await anon.post('/api/auth/bootstrap/redeem', {
    token: 'process-bootstrap-token-0123456789', email: 'owner@example.test', password: 'a long enough passphrase', name: 'Owner',
  });
  assert.equal(redeem.status, 201, redeem.text);
  const cookie = redeem.headers.get('set-cookie')!.split(';')[0];
  const keyRes = await client(platform.url, { cookie, org: redeem.body.org_id, space: redeem.body.space_id }).post('/api/api-keys', { name: 'skills' });
  assert.equal(keyRes.status, 201, keyRes.text);
  key = keyRes.body.key as string;
  api = client(platform.url, { key });
  await aDefaultModel(platform.url, key, fake.url, 'fake-script');
}

test("an imported skill's script runs under bubblewrap and its answer is the run's output", { skip: !findBubblewrap() && 'bwrap is not installed' }, async () => {
  await owner();

  await importPackage(platform.url, key, SKILL, 'word-count.afps');
  await importPackage(platform.url, key, agent('@acme/counter', { '@acme/word-count': '^1.0.0' }), 'counter.afps');
  const launched = await api.post('/api/agents/@acme/counter/run', { input: {} });
  assert.equal(launched.status, 201, launched.text);
  const done = await api.get(`/api/runs/${launched.body.id}?wait=60`);
  assert.equal(done.body.status, 'success', `run ended ${done.body.status}: ${JSON.stringify(done.body.error)}\n${platform.output().slice(-3000)}`);
  // 5 words; the shell's sandbox has no /etc
  assert.equal(done.body.result.output.result, 'exit code 0\n5\netc=1');
  // the model was told where the skill lives
  const system = fake.requests.find((r) => r.model === 'fake-script')?.body.messages.find((m: any) => m.role === 'system')?.content as string;
  assert.match(system, /- word-count: Counts the words of a text file \(location: skills\/word-count\/, instructions in skills\/word-count\/SKILL\.md\)/);
});

const fileSteps = [
  { tool: 'workspace_bash', arguments: { command: 'mkdir -p out && bash skills/word-count/scripts/count.sh input/words.txt > out/count.txt && cat out/count.txt' } },
  { tool: 'publish_file', arguments: { name: 'count.txt', path: 'out/count.txt' } },
  { tool: 'output', arguments: { result: '{{result:0}}' } },
];

function fileAgent(name: string): Buffer {
  return zip({
    'manifest.json': JSON.stringify({
      name, version: '1.0.0', type: 'agent', schema_version: '0.3', timeout: 120,
      dependencies: { skills: { '@acme/word-count': '^1.0.0' } },
      input: { schema: { type: 'object', properties: { doc: { type: 'string', format: 'file' } }, required: ['doc'] } },
      output: { schema: { type: 'object', properties: { result: { type: 'string' } }, required: ['result'], additionalProperties: false } },
      runtime_tools: ['output', 'publish_file'],
    }),
    'prompt.md': `Count the words of the input file and publish the count.\n\n\`\`\`fake-model-script\n${JSON.stringify(fileSteps)}\n\`\`\`\n`,
  });
}

test('an uploaded file goes into the run, the skill counts it, publish_file makes the result a durable file', { skip: !findBubblewrap() && 'bwrap is not installed' }, async () => {
  await owner();
  await importPackage(platform.url, key, SKILL, 'word-count.afps').catch(() => undefined); // imported by the first test when it ran
  await importPackage(platform.url, key, fileAgent('@acme/file-counter'), 'file-counter.afps');

  const text = 'alpha beta gamma delta\nepsilon zeta eta\n';
  const staged = await api.post('/api/uploads', { name: 'words.txt', size: Buffer.byteLength(text), mime_type: 'text/plain' });
  assert.equal(staged.status, 201, staged.text);
  const put = await fetch(staged.body.upload_url, { method: 'PUT', body: text });
  assert.equal(put.status, 201, await put.clone().text());

  const launched = await api.post('/api/agents/@acme/file-counter/run', { input: { doc: `upload:${staged.body.id}` } });
  assert.equal(launched.status, 201, launched.text);
  const done = await api.get(`/api/runs/${launched.body.id}?wait=60`);
  assert.equal(done.body.status, 'success', `run ended ${done.body.status}: ${JSON.stringify(done.body.error)}\n${platform.output().slice(-3000)}`);
  assert.match(done.body.result.output.result, /^exit code 0\n7\n?$/);

  const files = await api.get(`/api/runs/${launched.body.id}/files`);
  assert.equal(files.status, 200, files.text);
  const published = files.body.data.find((f: any) => f.role === 'output');
  assert.ok(published, `an output file is listed: ${files.text}`);
  assert.equal(published.name, 'count.txt');
  assert.ok(files.body.data.some((f: any) => f.role === 'input' && f.workspace_name === 'words.txt'), files.text);
  const content = await fetch(`${platform.url}/api/files/${published.id}/content`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(content.status, 200);
  assert.equal((await content.text()).trim(), '7');
});

test('publish_file refuses a workspace path that leads out of the workspace', { skip: !findBubblewrap() && 'bwrap is not installed' }, async () => {
  await owner();
  await importPackage(platform.url, key, SKILL, 'word-count.afps').catch(() => undefined);
  const steps = [
    { tool: 'publish_file', arguments: { name: 'passwd', path: '../../../../etc/passwd' } },
    { tool: 'workspace_bash', arguments: { command: 'ln -s /etc/hostname host.txt; echo linked' } },
    { tool: 'publish_file', arguments: { name: 'host.txt', path: 'host.txt' } },
    { tool: 'output', arguments: { result: '{{result:0}} | {{result:2}}' } },
  ];
  const escaping = zip({
    'manifest.json': JSON.stringify({
      name: '@acme/escaper', version: '1.0.0', type: 'agent', schema_version: '0.3', timeout: 120,
      output: { schema: { type: 'object', properties: { result: { type: 'string' } }, required: ['result'], additionalProperties: false } },
      runtime_tools: ['output', 'publish_file'],
    }),
    'prompt.md': `Publish files.\n\n\`\`\`fake-model-script\n${JSON.stringify(steps)}\n\`\`\`\n`,
  });
  await importPackage(platform.url, key, escaping, 'escaper.afps');
  const launched = await api.post('/api/agents/@acme/escaper/run', { input: {} });
  assert.equal(launched.status, 201, launched.text);
  const done = await api.get(`/api/runs/${launched.body.id}?wait=60`);
  assert.equal(done.body.status, 'success', `run ended ${done.body.status}: ${JSON.stringify(done.body.error)}`);
  const files = await api.get(`/api/runs/${launched.body.id}/files`);
  assert.deepEqual(files.body.data.filter((f: any) => f.role === 'output'), [], `nothing was published: ${files.text}`);
  assert.doesNotMatch(done.body.result.output.result, /root:/);
});

test('a declared skill that is not in the space is missing_skill at launch', async () => {
  await owner();
  await importPackage(platform.url, key, agent('@acme/lost', { '@acme/absent-skill': '^1.0.0' }), 'lost.afps');
  const missing = await api.post('/api/agents/@acme/lost/run', { input: {} });
  assert.equal(missing.status, 400, missing.text);
  assert.equal(missing.body.code, 'missing_skill');
});
