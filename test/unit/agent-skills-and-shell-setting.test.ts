import { test } from 'node:test';
import assert from 'node:assert/strict';
import { skillFolders } from '../../activities/run-activities.ts';
import { buildSystemPrompt } from '../../agent-runtime/system-prompt.ts';
import { ConfigError, loadConfig } from '../../lib/config.ts';

test('SANDBOX_UNCONFINED_SHELL_UNSAFE is off unless exactly true; another value stops boot naming it', () => {
  assert.equal(loadConfig({}).SANDBOX_UNCONFINED_SHELL_UNSAFE, false);
  assert.equal(loadConfig({ SANDBOX_UNCONFINED_SHELL_UNSAFE: 'true' }).SANDBOX_UNCONFINED_SHELL_UNSAFE, true);
  assert.equal(loadConfig({ SANDBOX_UNCONFINED_SHELL_UNSAFE: 'false' }).SANDBOX_UNCONFINED_SHELL_UNSAFE, false);
  for (const value of ['yes', '1', 'TRUE']) {
    assert.throws(() => loadConfig({ SANDBOX_UNCONFINED_SHELL_UNSAFE: value }), (err: unknown) => err instanceof ConfigError && /SANDBOX_UNCONFINED_SHELL_UNSAFE/.test(err.message), value);
  }
});

test('skills go under their name; two of the same name keep their scope', () => {
  assert.deepEqual(
    [...skillFolders(['@acme/pdf', '@acme/count', '@other/pdf'])],
    [['@acme/pdf', 'acme__pdf'], ['@acme/count', 'count'], ['@other/pdf', 'other__pdf']],
  );
});

test('the system prompt lists every skill with its description and folder, and says whether there is a shell', () => {
  const ws = {
    dir: '/workspace',
    prompt: 'Do the task.',
    input: undefined,
    skills: [
      { id: 'count', name: 'count', description: 'Counts words', folder: 'skills/count', path: 'skills/count/SKILL.md' },
      { id: 'pdf', name: 'pdf', description: '', folder: 'skills/pdf', path: 'skills/pdf/SKILL.md' },
    ],
  };
  const withShell = buildSystemPrompt(ws, ['workspace_read', 'workspace_bash', 'output']);
  assert.match(withShell, /^- count: Counts words \(location: skills\/count\/, instructions in skills\/count\/SKILL\.md\)$/m);
  assert.match(withShell, /^- pdf: \(no description\) \(location: skills\/pdf\/, instructions in skills\/pdf\/SKILL\.md\)$/m);
  assert.match(withShell, /workspace_bash runs a command/);
  assert.match(withShell, /bash skills\/count\/scripts\/<script>/);
  const without = buildSystemPrompt(ws, ['workspace_read', 'output']);
  assert.match(without, /No shell is available in this run/);
  assert.doesNotMatch(without, /workspace_bash/);
});
