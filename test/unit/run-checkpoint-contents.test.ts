// What a checkpoint holds and what every hop refuses: the agent runtime carries the files changed
// since the start (those a resume restored included) and the paths removed, within its bounds;
// the sidecar and the platform take only a well-formed checkpoint with paths inside the workspace.
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CheckpointRecorder } from '../../agent-runtime/checkpoints.ts';
import { MAX_CHECKPOINT_FILES, isWorkspaceRelativePath, parseCheckpointState } from '../../lib/run-checkpoints.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'checkpoint-contents-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A recorder over `workspace` whose sidecar keeps what it is sent. */
function recorderOf(workspace: string, resumed: ConstructorParameters<typeof CheckpointRecorder>[0]['resumed'] = null) {
  const sent: any[] = [];
  const fetch = (async (_url: string, init: RequestInit) => {
    sent.push(JSON.parse(String(init.body)));
    return new Response(null, { status: 204 });
  }) as typeof globalThis.fetch;
  return { recorder: new CheckpointRecorder({ workspace, sidecarUrl: 'http://sidecar.test', fetch, resumed }), sent };
}

const decoded = (files: Array<{ path: string; content: string }>) => files.map((f) => [f.path, Buffer.from(f.content, 'base64').toString()]);

test('a checkpoint carries the files created or changed since the start and the paths removed, never the untouched ones', async () => {
  const ws = join(dir, 'fresh');
  await mkdir(join(ws, 'skills/a'), { recursive: true });
  await writeFile(join(ws, 'prompt.md'), 'the prompt');
  await writeFile(join(ws, 'skills/a/SKILL.md'), 'a skill');
  await writeFile(join(ws, 'input.json'), '{}');
  const { recorder, sent } = recorderOf(ws);
  await recorder.begin();
  await writeFile(join(ws, 'notes.txt'), 'new');
  await writeFile(join(ws, 'input.json'), '{"changed":true}');
  await unlink(join(ws, 'skills/a/SKILL.md'));
  assert.equal(await recorder.record([{ role: 'user', content: 'go' }]), true);
  assert.equal(sent[0].step, 1);
  assert.deepEqual(decoded(sent[0].files), [['input.json', '{"changed":true}'], ['notes.txt', 'new']]);
  assert.deepEqual(sent[0].removed, ['skills/a/SKILL.md']);
  assert.deepEqual(sent[0].messages, [{ role: 'user', content: 'go' }]);
  // the sidecar's and the platform's check takes what the runtime sends
  assert.equal(parseCheckpointState(sent[0]).files.length, 2);
  await recorder.record([{ role: 'user', content: 'go' }]);
  assert.equal(sent[1].step, 2, 'steps count on');
});

test('after a resume, the restored files and removals stay in every checkpoint; steps count on from the checkpoint', async () => {
  const ws = join(dir, 'resumed');
  await mkdir(ws, { recursive: true });
  await writeFile(join(ws, 'prompt.md'), 'the prompt');
  await writeFile(join(ws, 'restored.txt'), 'from the first run');
  const { recorder, sent } = recorderOf(ws, { step: 3, messages: [], files: ['restored.txt'], removed: ['gone.txt'] });
  await recorder.begin();
  assert.equal(recorder.completedSteps, 3);
  await recorder.record([{ role: 'user', content: 'go' }]);
  assert.equal(sent[0].step, 4);
  assert.deepEqual(decoded(sent[0].files), [['restored.txt', 'from the first run']]);
  assert.deepEqual(sent[0].removed, ['gone.txt']);
});

test('files past the bound are left out and the checkpoint says so', async () => {
  const ws = join(dir, 'many');
  await mkdir(ws, { recursive: true });
  const { recorder, sent } = recorderOf(ws);
  await recorder.begin();
  for (let i = 0; i <= MAX_CHECKPOINT_FILES; i++) await writeFile(join(ws, `f${String(i).padStart(3, '0')}.txt`), `${i}`);
  await recorder.record([{ role: 'user', content: 'go' }]);
  assert.equal(sent[0].files.length, MAX_CHECKPOINT_FILES);
  assert.equal(sent[0].truncated, true);
});

test('a file rewritten with the same size is seen as changed by its modification time', async () => {
  const ws = join(dir, 'same-size');
  await mkdir(ws, { recursive: true });
  await writeFile(join(ws, 'a.txt'), 'aaaa');
  await utimes(join(ws, 'a.txt'), new Date(1_000_000), new Date(1_000_000));
  const { recorder, sent } = recorderOf(ws);
  await recorder.begin();
  await writeFile(join(ws, 'a.txt'), 'bbbb');
  await recorder.record([{ role: 'user', content: 'go' }]);
  assert.deepEqual(decoded(sent[0].files), [['a.txt', 'bbbb']]);
});

test('paths outside the workspace and malformed checkpoints are refused, naming what is wrong', () => {
  for (const bad of ['', '/etc/passwd', '../x', 'a/../../x', 'a//b', './a', 'a\0b', 'a\\b']) assert.equal(isWorkspaceRelativePath(bad), false, JSON.stringify(bad));
  assert.equal(isWorkspaceRelativePath('notes/plan.txt'), true);
  const good = { step: 1, messages: [{ role: 'user', content: 'x' }], files: [], removed: [] };
  const refusal = (body: unknown) => {
    try {
      parseCheckpointState(body);
      return null;
    } catch (err) {
      return (err as Error).message;
    }
  };
  assert.equal(refusal(good), null);
  assert.match(refusal([])!, /body must be an object/);
  assert.match(refusal({ ...good, step: 0 })!, /step/);
  assert.match(refusal({ ...good, messages: [] })!, /messages/);
  assert.match(refusal({ ...good, messages: ['text'] })!, /role/);
  assert.match(refusal({ ...good, files: [{ path: '../escape', content: '' }] })!, /relative path/);
  assert.match(refusal({ ...good, files: [{ path: 'a', content: 'not base64!' }] })!, /base64/);
  assert.match(refusal({ ...good, files: [{ path: 'a', content: '' }, { path: 'a', content: '' }] })!, /twice/);
  assert.match(refusal({ ...good, files: Array.from({ length: MAX_CHECKPOINT_FILES + 1 }, (_, i) => ({ path: `f${i}`, content: '' })) })!, /at most/);
  assert.match(refusal({ ...good, removed: ['/abs'] })!, /removed/);
  // only what a checkpoint holds is kept
  assert.deepEqual(parseCheckpointState({ ...good, extra: 'dropped' }), good);
});
