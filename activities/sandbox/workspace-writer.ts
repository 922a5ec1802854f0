// Writes a run's workspace files under its sandbox folder. Paths come from packages and run
// input, so each must stay inside the folder: relative, no '..', no NUL, no backslash tricks.
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { WorkspaceFile } from './adapter.ts';

export class UnsafeWorkspacePath extends Error {
  constructor(readonly filePath: string) {
    super(`workspace file path ${JSON.stringify(filePath.slice(0, 200))} is not a safe relative path`);
  }
}

/** The normalized relative path, or an UnsafeWorkspacePath error. */
export function safeWorkspacePath(filePath: string): string {
  if (typeof filePath !== 'string' || filePath === '' || filePath.includes('\0') || filePath.includes('\\')) {
    throw new UnsafeWorkspacePath(String(filePath));
  }
  if (filePath.startsWith('/') || filePath.split('/').some((segment) => segment === '..')) throw new UnsafeWorkspacePath(filePath);
  const normalized = path.posix.normalize(filePath);
  if (normalized === '.' || normalized.startsWith('../') || normalized.endsWith('/')) throw new UnsafeWorkspacePath(filePath);
  return normalized;
}

/** Checks every path first, so a bad file never leaves half a workspace behind. */
export function checkWorkspacePaths(files: WorkspaceFile[]): string[] {
  const paths = files.map((f) => safeWorkspacePath(f.path));
  const seen = new Set<string>();
  for (const p of paths) {
    if (seen.has(p)) throw new Error(`workspace file path ${JSON.stringify(p)} appears twice`);
    seen.add(p);
  }
  return paths;
}

// below this total a run's start is quicker with direct writes than with thread-pool round trips
const SYNC_WRITE_MAX_BYTES = 256 * 1024;
/** streamed files written at once: each holds about two 1 MiB buffers, whatever its size */
const STREAMS_AT_ONCE = 4;
const CHUNK_BYTES = 1024 * 1024;

/**
 * Writes the workspace: held files directly, streamed ones (input files) piped from their source
 * into the file, a few at a time, so memory does not grow with their sizes. A streamed file that
 * fails to arrive whole fails the write.
 */
export async function writeWorkspace(dir: string, files: WorkspaceFile[]): Promise<void> {
  const paths = checkWorkspacePaths(files);
  const folders = [...new Set(paths.map((p) => path.posix.dirname(p)).filter((d) => d !== '.'))];
  // 'wx': never write through anything already there
  const flag = 'wx';
  const held = files.flatMap((f, i) => ('content' in f ? [{ target: path.join(dir, paths[i]), content: f.content }] : []));
  const streamed = files.flatMap((f, i) => ('open' in f ? [{ target: path.join(dir, paths[i]), open: f.open }] : []));
  if (streamed.length === 0 && held.reduce((sum, f) => sum + f.content.length, 0) <= SYNC_WRITE_MAX_BYTES) {
    for (const folder of folders) mkdirSync(path.join(dir, folder), { recursive: true });
    for (const f of held) writeFileSync(f.target, f.content, { flag });
    return;
  }
  for (const folder of folders) await mkdir(path.join(dir, folder), { recursive: true });
  await Promise.all(held.map((f) => writeFile(f.target, f.content, { flag })));
  let next = 0;
  const worker = async () => {
    while (next < streamed.length) {
      const f = streamed[next++];
      await pipeline(await f.open(), createWriteStream(f.target, { flags: flag, highWaterMark: CHUNK_BYTES }));
    }
  };
  await Promise.all(Array.from({ length: Math.min(STREAMS_AT_ONCE, streamed.length) }, worker));
}
