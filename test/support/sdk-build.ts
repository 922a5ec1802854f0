// Builds the SDK under sdk/ as its package script would, into a temporary folder, from the types
// generated from an instance's live document; and sets up a program folder that depends on it.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from '../../sdk/scripts/generate.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const SDK = join(ROOT, 'sdk');
export const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** Runs node with these arguments in cwd; each stdout line goes to onLine as it comes. */
export function runNode(cwd: string, args: string[], env: Record<string, string> = {}, onLine?: (line: string) => void): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk;
      if (onLine) for (const line of chunk.toString().split('\n')) if (line) onLine(line);
    });
    child.stderr.on('data', (chunk: Buffer) => (out += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** Copies the SDK into dir/sdk, generates its types from the document text and compiles it to dist/. */
export async function buildSdk(dir: string, documentText: string): Promise<{ code: number | null; out: string; path: string }> {
  const path = join(dir, 'sdk');
  for (const part of ['package.json', 'tsconfig.json', 'README.md', 'src/core.ts', 'src/index.ts']) cpSync(join(SDK, part), join(path, part), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(path, 'node_modules'), 'dir');
  await generate(documentText, join(path, 'src/generated'));
  return { ...(await runNode(path, [TSC, '-p', 'tsconfig.json'])), path };
}

/** A program folder at dir/app whose @agent-platform/sdk is the built SDK; writes source as first-run.ts. */
export function programUsingSdk(dir: string, sdkPath: string, source: string): string {
  const app = join(dir, 'app');
  mkdirSync(join(app, 'node_modules/@agent-platform'), { recursive: true });
  symlinkSync(sdkPath, join(app, 'node_modules/@agent-platform/sdk'), 'dir');
  for (const dep of ['tsx', '@types', 'undici-types']) symlinkSync(join(ROOT, 'node_modules', dep), join(app, 'node_modules', dep), 'dir');
  writeFileSync(join(app, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  writeFileSync(join(app, 'first-run.ts'), source);
  return app;
}

/** The TypeScript program of the SDK README's first run. */
export function readmeFirstRun(readme: string): string {
  const m = /```ts\n([\s\S]*?)```/.exec(readme);
  if (!m) throw new Error('the SDK README has no ts block');
  return m[1];
}

/** tsc --strict --noEmit over first-run.ts in a program folder. */
export function typeCheckProgram(app: string) {
  return runNode(app, [TSC, '--strict', '--noEmit', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--types', 'node', '--skipLibCheck', 'first-run.ts']);
}
