// The files suite, run once over local storage (files-local-storage.test.ts) and once over an
// S3-compatible server on loopback (files-s3-storage.test.ts): uploads, durable files, previews,
// retention, files into runs and published files, with every file code of the catalog.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeWorkspace } from '../../activities/sandbox/workspace-writer.ts';
import { sweepExpiredFiles } from '../../api/services/files/files.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { writeZip } from '../../lib/zip/write-zip.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { call, client } from '../support/http.ts';
import { aDefaultModel, importPackage } from '../support/runs.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

const FILE_AGENT = {
  name: '@files/reader', version: '1.0.0', type: 'agent', schema_version: '0.3',
  input: {
    schema: {
      type: 'object',
      properties: {
        doc: { type: 'string', format: 'file' },
        more: { type: 'array', items: { type: 'string', format: 'file' } },
        note: { type: 'string' },
      },
      additionalProperties: false,
    },
  },
  runtime_tools: ['log', 'publish_file'],
};

export interface StorageUnderTest {
  env: Record<string, string>;
  /** whether the stored content of a key still exists */
  exists(key: string): Promise<boolean>;
  stop(): Promise<void>;
}

export function filesSuite(start: () => Promise<StorageUnderTest>): void {
  let store: StorageUnderTest;
  const storage = () => store;
  let app: TestApp;
  let fake: FakeModel;
  let org: Awaited<ReturnType<typeof anOrg>>;
  let key: string;
  let api: ReturnType<typeof client>;

  before(async () => {
    store = await start();
    fake = await startFakeModel();
    app = await startTestApp({
      env: {
        ...storage().env,
        EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host,
        FILE_MAX_BYTES: String(1024 * 1024),
        UPLOAD_MAX_ACTIVE_PER_ACTOR: '3',
        RUN_MAX_FILES: '2',
        ORG_STORAGE_QUOTA_BYTES: String(3 * 1024 * 1024),
      },
    });
    org = await anOrg(app.deps.database.pool);
    key = (await aKey(app.deps.database.pool, { ...org, userId: org.ownerId })).key;
    api = client(app.url, { key });
    await aDefaultModel(app.url, key, fake.url);
    await importPackage(app.url, key, writeZip(new Map([
      ['manifest.json', Buffer.from(JSON.stringify(FILE_AGENT))],
      ['prompt.md', Buffer.from('Read the input files.')],
    ])));
  });
  after(async () => {
    await app.close();
    await fake.close();
    await store.stop();
  });

  /** A fresh key of a fresh actor: its own staging slots and rate-limit buckets. */
  const anotherKey = async () => client(app.url, { key: (await aKey(app.deps.database.pool, { ...org, userId: org.ownerId })).key });

  async function stage(c: ReturnType<typeof client>, content: Buffer, extra: Record<string, unknown> = {}) {
    const res = await c.post('/api/uploads', { name: 'notes.txt', size: content.length, mime_type: 'text/plain', ...extra });
    assert.equal(res.status, 201, res.text);
    return res.body as { id: string; upload_url: string; expiresAt: string };
  }

  async function put(url: string, body: Buffer | string, headers: Record<string, string> = {}) {
    // no credential: the URL is one
    const res = await fetch(url, { method: 'PUT', body, headers: { 'content-type': 'application/octet-stream', ...headers } });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
  }

  async function anUploadedFile(c: ReturnType<typeof client>, content: Buffer | string, extra: Record<string, unknown> = {}) {
    const bytes = Buffer.from(content);
    const up = await stage(c, bytes, extra);
    const res = await put(up.upload_url, bytes);
    assert.equal(res.status, 201, res.text);
    return { upload: up, file: res.body as { id: string; sha256: string; size: number; name: string } };
  }

  test('a staged upload takes its content through its URL and becomes a durable file, listed, read whole and by range', async () => {
    const content = Buffer.from('hello, durable world\n');
    const staged = await api.post('/api/uploads', { name: 'hello.txt', size: String(content.length), mime_type: 'text/plain', sha256: sha(content) });
    assert.equal(staged.status, 201, staged.text);
    assert.equal(staged.body.size, content.length, 'size is coerced from a string');
    assert.equal(staged.headers.get('location'), staged.body.upload_url);
    assert.match(staged.body.upload_url, /\/api\/uploads\/_content\?token=/);
    assert.ok(Date.parse(staged.body.expiresAt) > Date.now());

    const written = await put(staged.body.upload_url, content);
    assert.equal(written.status, 201, written.text);
    assert.equal(written.body.sha256, sha(content));
    assert.equal(written.body.size, content.length);
    assert.equal(written.headers.get('location'), `/api/files/${written.body.id}`);
    const id = written.body.id;

    const list = await api.get('/api/files');
    assert.equal(list.status, 200);
    assert.ok(list.body.data.some((f: { id: string }) => f.id === id));
    const one = await api.get(`/api/files/${id}`);
    assert.equal(one.body.name, 'hello.txt');
    assert.equal(one.body.kept, false);
    assert.ok(one.body.expiresAt, 'a file expires unless kept');

    const whole = await api.get(`/api/files/${id}/content`);
    assert.equal(whole.status, 200);
    assert.equal(whole.text, content.toString());
    assert.equal(whole.headers.get('etag'), `"${sha(content)}"`);
    assert.equal(whole.headers.get('x-content-type-options'), 'nosniff');
    assert.match(whole.headers.get('content-disposition') ?? '', /^attachment; filename="hello.txt"/);

    const part = await api.get(`/api/files/${id}/content`, { headers: { range: 'bytes=7-13' } });
    assert.equal(part.status, 206);
    assert.equal(part.text, content.subarray(7, 14).toString());
    assert.equal(part.headers.get('content-range'), `bytes 7-13/${content.length}`);
    const tail = await api.get(`/api/files/${id}/content`, { headers: { range: 'bytes=-6' } });
    assert.equal(tail.text, content.subarray(content.length - 6).toString());
    const beyond = await api.get(`/api/files/${id}/content`, { headers: { range: `bytes=${content.length}-` } });
    assert.equal(beyond.status, 416);
    assert.equal(beyond.headers.get('content-range'), `bytes */${content.length}`);
    const unchanged = await api.get(`/api/files/${id}/content`, { headers: { 'if-none-match': whole.headers.get('etag')! } });
    assert.equal(unchanged.status, 304);
  });

  test('the list pages by cursor', async () => {
    const c = await anotherKey();
    const ids = [];
    for (const n of [1, 2, 3]) ids.push((await anUploadedFile(c, `page ${n}`)).file.id);
    const first = await c.get('/api/files?limit=2');
    assert.equal(first.body.data.length, 2);
    assert.equal(first.body.hasMore, true);
    assert.match(first.headers.get('link') ?? '', /rel="next"/);
    const last = first.body.data[1].id;
    const next = await c.get(`/api/files?limit=2&startingAfter=${last}`);
    assert.ok(next.body.data.every((f: { id: string }) => f.id > last));
  });

  test('size is a coerced numeric field: absent is invalid_type; the body is checked field by field', async () => {
    const res = await api.post('/api/uploads', { name: 'a.txt', mime_type: 'text/plain' });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_failed');
    assert.deepEqual(res.body.errors.map((e: { field: string; code: string }) => [e.field, e.code]), [['size', 'invalid_type']]);
    const bad = await api.post('/api/uploads', { name: 'dir/a.txt', size: 1, mime_type: 'nope', sha256: 'xyz' });
    assert.deepEqual(bad.body.errors.map((e: { field: string }) => e.field).sort(), ['mime_type', 'name', 'sha256']);
  });

  test('payload_too_large: a staged size past FILE_MAX_BYTES, and content longer than staged', async () => {
    const c = await anotherKey();
    const big = await c.post('/api/uploads', { name: 'big.bin', size: 1024 * 1024 + 1, mime_type: 'application/octet-stream' });
    assert.equal(big.status, 413);
    assert.equal(big.body.code, 'payload_too_large');

    const up = await stage(c, Buffer.alloc(10));
    const declared = await put(up.upload_url, Buffer.alloc(11));
    assert.equal(declared.status, 413, declared.text);
    assert.equal(declared.body.code, 'payload_too_large');
    // without a declared length the count while streaming refuses it
    const streamed = await fetch(up.upload_url, {
      method: 'PUT', duplex: 'half', body: new ReadableStream({ start(ctl) { ctl.enqueue(new Uint8Array(6)); ctl.enqueue(new Uint8Array(6)); ctl.close(); } }),
    } as RequestInit);
    assert.equal(streamed.status, 413);
    assert.equal(((await streamed.json()) as { code: string }).code, 'payload_too_large');
    const shorter = await put(up.upload_url, Buffer.alloc(9));
    assert.equal(shorter.status, 400);
    // a failed write leaves the URL usable
    assert.equal((await put(up.upload_url, Buffer.alloc(10))).status, 201);
  });

  test('checksum_mismatch, then the right bytes are taken, then upload_already_written', async () => {
    const c = await anotherKey();
    const content = Buffer.from('exact bytes');
    const up = await stage(c, content, { sha256: sha(content) });
    const wrong = await put(up.upload_url, Buffer.from('other bytes'));
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.code, 'checksum_mismatch');
    const { rows } = await app.deps.database.pool.query('SELECT count(*)::int AS n FROM files WHERE sha256 = $1', [sha('other bytes')]);
    assert.equal(rows[0].n, 0, 'no file from a refused write');
    assert.equal((await put(up.upload_url, content)).status, 201);
    const again = await put(up.upload_url, content);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'upload_already_written');
  });

  test('upload_expired past the expiry; a forged or foreign token is refused', async () => {
    const c = await anotherKey();
    const up = await stage(c, Buffer.from('late'));
    await app.deps.database.pool.query(`UPDATE uploads SET expires_at = now() - interval '1 second' WHERE id = $1`, [up.id]);
    const late = await put(up.upload_url, Buffer.from('late'));
    assert.equal(late.status, 410);
    assert.equal(late.body.code, 'upload_expired');
    const forged = await put(`${app.url}/api/uploads/_content?token=v1.abc.def.ghi`, Buffer.from('x'));
    assert.equal(forged.status, 401);
    const missing = await put(`${app.url}/api/uploads/_content`, Buffer.from('x'));
    assert.equal(missing.status, 400);
    assert.equal(missing.body.code, 'invalid_request');
  });

  test('upload_staging_limit_exceeded (429) past UPLOAD_MAX_ACTIVE_PER_ACTOR uploads waiting for content', async () => {
    const c = await anotherKey();
    for (let i = 0; i < 3; i++) await stage(c, Buffer.from('x'));
    const over = await c.post('/api/uploads', { name: 'x.txt', size: 1, mime_type: 'text/plain' });
    assert.equal(over.status, 429);
    assert.equal(over.body.code, 'upload_staging_limit_exceeded');
    // another actor has slots of its own
    await stage(await anotherKey(), Buffer.from('x'));
  });

  test('storage_limit_exceeded (403) when files and staged uploads would pass ORG_STORAGE_QUOTA_BYTES', async () => {
    const pool = app.deps.database.pool;
    const other = await anOrg(pool);
    const c = client(app.url, { key: (await aKey(pool, { ...other, userId: other.ownerId })).key });
    const mib = Buffer.alloc(1024 * 1024, 7);
    await anUploadedFile(c, mib);
    await stage(c, mib);
    await stage(c, mib);
    const over = await c.post('/api/uploads', { name: 'x.bin', size: 1, mime_type: 'application/octet-stream' });
    assert.equal(over.status, 403);
    assert.equal(over.body.code, 'storage_limit_exceeded');
  });

  test('a preview link works without headers, within its lifetime, and never serves script to the origin', async () => {
    const c = await anotherKey();
    const text = (await anUploadedFile(c, 'plain words')).file;
    const html = (await anUploadedFile(c, '<script>alert(1)</script>', { name: 'x.html', mime_type: 'text/html' })).file;
    const link = (await c.get(`/api/files/${text.id}`)).body;
    assert.ok(Date.parse(link.preview_expires_at) > Date.now());
    const shown = await fetch(link.preview_url);
    assert.equal(shown.status, 200);
    assert.equal(await shown.text(), 'plain words');
    assert.equal(shown.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(shown.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(shown.headers.get('content-security-policy'), "sandbox; default-src 'none'");
    assert.match(shown.headers.get('content-disposition') ?? '', /^inline; /);

    const page = await fetch((await c.get(`/api/files/${html.id}`)).body.preview_url);
    assert.equal(page.headers.get('content-type'), 'application/octet-stream');
    assert.match(page.headers.get('content-disposition') ?? '', /^attachment; /);
    assert.equal(page.headers.get('content-security-policy'), "sandbox; default-src 'none'");

    const token = new URL(link.preview_url).searchParams.get('token')!;
    const foreign = await fetch(`${app.url}/preview/files/${html.id}?token=${encodeURIComponent(token)}`);
    assert.equal(foreign.status, 401, 'a link opens only its own file');
    const uploadToken = new URL((await stage(c, Buffer.from('x'))).upload_url).searchParams.get('token')!;
    assert.equal((await fetch(`${app.url}/preview/files/${text.id}?token=${encodeURIComponent(uploadToken)}`)).status, 401, 'an upload token is no preview link');
  });

  test('retention: files expire unless kept; the sweep removes expired files and their content', async () => {
    const c = await anotherKey();
    const kept = (await anUploadedFile(c, 'keep me')).file;
    const lapsed = (await anUploadedFile(c, 'let me go')).file;
    const keep = await c.post(`/api/files/${kept.id}/keep`);
    assert.equal(keep.status, 200);
    assert.equal(keep.body.kept, true);
    assert.equal(keep.body.expiresAt, null);
    const pool = app.deps.database.pool;
    await pool.query(`UPDATE files SET expires_at = now() - interval '1 minute' WHERE id = $1`, [lapsed.id]);
    const { rows } = await pool.query('SELECT storage_key FROM files WHERE id = $1', [lapsed.id]);
    assert.equal(await storage().exists(rows[0].storage_key), true);
    assert.ok((await sweepExpiredFiles(pool, app.deps.config)) >= 1);
    assert.equal((await c.get(`/api/files/${lapsed.id}`)).status, 404);
    assert.equal(await storage().exists(rows[0].storage_key), false, 'its content is gone from storage');
    assert.equal((await c.get(`/api/files/${kept.id}/content`)).text, 'keep me');
  });

  test('files into a run: upload:, file: and data: values of format "file" fields; file_in_use while a run, in progress or ended, references it', async () => {
    const c = await anotherKey();
    const a = await anUploadedFile(c, 'alpha', { name: 'a.txt' });
    const b = await anUploadedFile(c, 'beta', { name: 'b.txt' });
    const launched = await c.post('/api/agents/@files/reader/run', { input: { doc: `upload:${a.upload.id}`, more: [`file:${b.file.id}`] } });
    assert.equal(launched.status, 201, launched.text);
    const runId = launched.body.id;
    const listed = await c.get(`/api/runs/${runId}/files`);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.data.map((f: { id: string; role: string; workspace_name: string }) => [f.id, f.role, f.workspace_name]).sort(),
      [[a.file.id, 'input', 'a.txt'], [b.file.id, 'input', 'b.txt']].sort());

    const inUse = await c.delete(`/api/files/${a.file.id}`);
    assert.equal(inUse.status, 409);
    assert.equal(inUse.body.code, 'file_in_use');
    // an ended run keeps its files for its record and a rerun: still referenced, still 409
    await app.deps.database.pool.query(`UPDATE runs SET status = 'success', finished_at = now() WHERE id = $1`, [runId]);
    const ended = await c.delete(`/api/files/${a.file.id}`);
    assert.equal(ended.status, 409, ended.text);
    assert.equal(ended.body.code, 'file_in_use');
    assert.match(ended.body.detail, new RegExp(runId));
    assert.equal((await c.get(`/api/runs/${runId}/files`)).body.data.length, 2, 'the run still lists its files');
    // once the run is deleted, nothing references the file
    assert.equal((await c.delete(`/api/runs/${runId}`)).status, 204);
    assert.equal((await c.delete(`/api/files/${a.file.id}`)).status, 204);
    assert.equal((await c.get(`/api/files/${a.file.id}`)).status, 404);

    const gone = await c.post('/api/agents/@files/reader/run', { input: { doc: `file:${a.file.id}` } });
    assert.equal(gone.status, 409);
    assert.equal(gone.body.code, 'file_unavailable');
    const notWritten = await c.post('/api/agents/@files/reader/run', { input: { doc: `upload:${(await stage(c, Buffer.from('x'))).id}` } });
    assert.equal(notWritten.body.code, 'file_unavailable');
    const twice = await c.post('/api/agents/@files/reader/run', { input: { doc: `file:${b.file.id}`, more: [`upload:${b.upload.id}`] } });
    assert.equal(twice.status, 400);
    assert.equal(twice.body.code, 'duplicate_file_name');
    const tooMany = await c.post('/api/agents/@files/reader/run', { input: { doc: `file:${b.file.id}`, more: ['data:,one', 'data:,two'] } });
    assert.equal(tooMany.status, 413);
    assert.equal(tooMany.body.code, 'file_count_exceeded');
    const malformed = await c.post('/api/agents/@files/reader/run', { input: { doc: 'https://example.test/x' } });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.errors[0].field, 'input.doc');
  });

  test('a data: URI travels inline; rerun_from refuses to replay it (rerun_inline_input_unavailable)', async () => {
    const c = await anotherKey();
    const inline = await c.post('/api/agents/@files/reader/run', { input: { doc: 'data:text/plain;name=inline.txt;base64,aGVsbG8=' } });
    assert.equal(inline.status, 201, inline.text);
    const rerun = await c.post('/api/agents/@files/reader/run', { rerun_from: inline.body.id });
    assert.equal(rerun.status, 409);
    assert.equal(rerun.body.code, 'rerun_inline_input_unavailable');
    const withInput = await c.post('/api/agents/@files/reader/run', { rerun_from: inline.body.id, input: { note: 'fresh' } });
    assert.equal(withInput.status, 201, 'a rerun that sends its input again is fine');
    const plain = await c.post('/api/agents/@files/reader/run', { input: { note: 'no files' } });
    assert.equal((await c.post('/api/agents/@files/reader/run', { rerun_from: plain.body.id })).status, 201);
  });

  test('an inline prompt naming a file URI answers the field code file_uri_in_prompt', async () => {
    const c = await anotherKey();
    const f = (await anUploadedFile(c, 'x')).file;
    const res = await c.post('/api/runs/inline', {
      manifest: { name: '@inline/files', version: '1.0.0', type: 'agent', schema_version: '0.3' },
      prompt: `Summarize file:${f.id} please.`,
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_failed');
    assert.deepEqual(res.body.errors.map((e: { field: string; code: string }) => [e.field, e.code]), [['prompt', 'file_uri_in_prompt']]);
  });

  test('a run publishes files through its signed route: durable, listed on the run, RUN_MAX_FILES and the end of the run enforced', async () => {
    const c = await anotherKey();
    const launched = await c.post('/api/agents/@files/reader/run', { input: { note: 'publish' } });
    const runId = launched.body.id;
    const pool = app.deps.database.pool;
    const secret = app.deps.secrets.open((await pool.query('SELECT event_secret FROM runs WHERE id = $1', [runId])).rows[0].event_secret);
    const publish = (name: string, content: string, signWith = secret) => {
      const raw = JSON.stringify({ name, mimeType: 'text/markdown', content: Buffer.from(content).toString('base64') });
      return call(app.url, 'POST', `/internal/runs/${runId}/files`, { rawBody: raw, headers: { 'content-type': 'application/json', ...signedRunEventHeaders(signWith, raw) } });
    };
    const first = await publish('report.md', '# Report');
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.source, 'run');
    assert.equal(first.body.run_id, runId);
    assert.equal((await c.get(`/api/files/${first.body.id}/content`)).text, '# Report');
    const replaced = await publish('report.md', '# Report v2');
    assert.equal(replaced.status, 201);
    assert.equal((await c.get(`/api/files/${first.body.id}`)).status, 404, 'publishing a name again replaces it');
    assert.equal((await publish('second.md', 'two')).status, 201);
    const third = await publish('third.md', 'three');
    assert.equal(third.status, 413);
    assert.equal(third.body.code, 'file_count_exceeded');
    const forged = await publish('x.md', 'x', 'whsec_' + Buffer.alloc(32, 1).toString('base64'));
    assert.equal(forged.status, 401);

    const listed = await c.get(`/api/runs/${runId}/files`);
    assert.deepEqual(listed.body.data.map((f: { role: string; workspace_name: string }) => [f.role, f.workspace_name]).sort(), [['output', 'report.md'], ['output', 'second.md']]);
    await pool.query(`UPDATE runs SET status = 'success', finished_at = now() WHERE id = $1`, [runId]);
    const late = await publish('late.md', 'late');
    assert.equal(late.status, 410);
    assert.equal(late.body.code, 'run_sink_closed');
  });

  test('workspace materials: input files land under input/ and the input points there', async () => {
    const c = await anotherKey();
    const a = await anUploadedFile(c, 'alpha', { name: 'a.txt' });
    const launched = await c.post('/api/agents/@files/reader/run', { input: { doc: `upload:${a.upload.id}`, more: ['data:text/csv;name=t.csv,x%2Cy'] } });
    const { inputFilesForWorkspace } = await import('../../api/services/files/run-files.ts');
    assert.equal(launched.status, 201, launched.text);
    const input = { doc: `upload:${a.upload.id}`, more: ['data:text/csv;name=t.csv,x%2Cy'] };
    const placed = await inputFilesForWorkspace(app.deps.database.pool, app.deps.config, launched.body.id, FILE_AGENT.input.schema, input);
    assert.deepEqual(placed.files.map((f) => [f.path, 'open' in f ? 'streamed' : 'held']), [['input/a.txt', 'streamed'], ['input/t.csv', 'held']], 'a stored file is read only as the workspace is written');
    assert.deepEqual(placed.input, { doc: 'input/a.txt', more: ['input/t.csv'] });
    const dir = await mkdtemp(path.join(tmpdir(), 'files-workspace-'));
    try {
      await writeWorkspace(dir, placed.files);
      assert.equal(await readFile(path.join(dir, 'input/a.txt'), 'utf8'), 'alpha');
      assert.equal(await readFile(path.join(dir, 'input/t.csv'), 'utf8'), 'x,y');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
}

