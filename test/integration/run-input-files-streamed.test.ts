// A run's input files are streamed from storage into its workspace at boot: a run naming
// RUN_MAX_FILES files of FILE_MAX_BYTES each boots without their sum in the worker's memory, and
// every file lands whole. The boot is the real one (runActivitiesFor) with an adapter that writes
// the workspace as the process and docker adapters do (writeWorkspace), into a folder of its own.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { SandboxAdapter, SandboxSpec } from '../../activities/sandbox/adapter.ts';
import { writeWorkspace } from '../../activities/sandbox/workspace-writer.ts';
import { runActivitiesFor } from '../../bin/sandbox.ts';
import { writeZip } from '../../lib/zip/write-zip.ts';
import { aRunWorld, importPackage, type RunWorld } from '../support/runs.ts';

const MIB = 1024 * 1024;
const FILES = 8;
const FILE_BYTES = 32 * MIB;
const TOTAL = FILES * FILE_BYTES;

setFlagsFromString('--expose-gc');
/** a full collection, so what is measured next is what is alive, not what waits to be collected */
const collect = runInNewContext('gc') as () => void;

let world: RunWorld;
let dir: string;

/** The bytes of file `n`: 1 MiB chunks of one value each, never held together. */
function contentOf(n: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent === FILE_BYTES) return void this.push(null);
      this.push(Buffer.alloc(MIB, (n * 31 + sent / MIB) % 251));
      sent += MIB;
    },
  });
}

async function sha256Of(stream: Readable): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Stages an upload and streams file `n` to its URL; answers the upload id and the file's sha256. */
async function anUpload(n: number): Promise<{ id: string; sha256: string }> {
  const staged = await world.api.post('/api/uploads', { name: `part-${n}.bin`, size: FILE_BYTES, mime_type: 'application/octet-stream' });
  assert.equal(staged.status, 201, staged.text);
  const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(staged.body.upload_url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream', 'content-length': String(FILE_BYTES) } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d) => (body += d)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    contentOf(n).pipe(req);
  });
  assert.equal(answer.status, 201, answer.body);
  return { id: staged.body.id, sha256: JSON.parse(answer.body).sha256 };
}

before(async () => {
  world = await aRunWorld({ fixture: null, env: { FILE_MAX_BYTES: String(FILE_BYTES), RUN_MAX_FILES: String(FILES), UPLOAD_MAX_ACTIVE_PER_ACTOR: '2' } });
  await importPackage(world.app.url, world.key, writeZip(new Map([
    ['manifest.json', Buffer.from(JSON.stringify({
      name: '@files/bulk-reader', version: '1.0.0', type: 'agent', schema_version: '0.3',
      input: { schema: { type: 'object', properties: { parts: { type: 'array', items: { type: 'string', format: 'file' } } }, required: ['parts'] } },
    }))],
    ['prompt.md', Buffer.from('Read every part.')],
  ])));
  dir = await mkdtemp(path.join(tmpdir(), 'streamed-inputs-'));
});
after(async () => {
  await world?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test(`${FILES} input files of ${FILE_BYTES / MIB} MiB boot without their sum in memory, and land whole under input/`, async () => {
  const uploads: Array<{ id: string; sha256: string }> = [];
  for (let n = 0; n < FILES; n++) uploads.push(await anUpload(n));
  const launched = await world.api.post('/api/agents/@files/bulk-reader/run', { input: { parts: uploads.map((u) => `upload:${u.id}`) } });
  assert.equal(launched.status, 201, launched.text);

  const workspace = path.join(dir, 'workspace');
  const writing = {
    kind: 'process',
    start: async (spec: SandboxSpec) => {
      await writeWorkspace(workspace, spec.workspace);
      return { sandboxId: 'sbx_streamed' };
    },
    alive: async () => true, state: async () => 'running', sandboxes: () => [], stop: async () => undefined, close: async () => undefined,
  } as unknown as SandboxAdapter;

  collect();
  const baseline = process.memoryUsage().arrayBuffers;
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().arrayBuffers);
  }, 1);
  try {
    await runActivitiesFor(world.app.deps, writing).boot(launched.body.id);
  } finally {
    clearInterval(sampler);
  }
  peak = Math.max(peak, process.memoryUsage().arrayBuffers);
  const held = peak - baseline;
  assert.ok(held < TOTAL / 4, `the boot held ${Math.round(held / MIB)} MiB of buffers at its peak for ${TOTAL / MIB} MiB of input files`);

  const input = JSON.parse(await readFile(path.join(workspace, 'input.json'), 'utf8'));
  assert.deepEqual(input.parts, uploads.map((_, n) => `input/part-${n}.bin`));
  for (let n = 0; n < FILES; n++) {
    assert.equal(await sha256Of(createReadStream(path.join(workspace, 'input', `part-${n}.bin`))), uploads[n].sha256, `part ${n} landed whole`);
  }
});
