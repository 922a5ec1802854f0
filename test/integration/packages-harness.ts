// Shared arrangements of the package tests: archives built in memory, a platform with an
// organization whose owner holds a key, and a multipart upload as a client sends it.
import zlib from 'node:zlib';
import { writeZip, encodeZip, type RawZipEntry } from '../../lib/zip/index.ts';
import { startTestApp, type TestApp, type TestAppOptions } from '../support/app.ts';
import { aKey, anOrg, type BuiltOrg } from '../support/builders.ts';
import { client, type WireResponse } from '../support/http.ts';

export type Files = Record<string, string | Buffer>;

export function zip(files: Files): Buffer {
  return writeZip(new Map(Object.entries(files).map(([path, v]) => [path, Buffer.isBuffer(v) ? v : Buffer.from(v)])));
}

/** A ZIP laid out as another tool would (stored entries, given order): never what our writer produces. */
export function storedZip(files: Files): Buffer {
  const entries: RawZipEntry[] = Object.entries(files).map(([name, v]) => {
    const data = Buffer.isBuffer(v) ? v : Buffer.from(v);
    return { name, method: 0, data, crc32: zlib.crc32(data), uncompressedSize: data.length };
  });
  return encodeZip(entries);
}

export function manifest(name: string, version: string, type: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ name, version, type, schema_version: '0.3', ...extra }, null, 2);
}

export function agentFiles(name: string, version: string, extra: Record<string, unknown> = {}, prompt = 'Answer the question.'): Files {
  return { 'manifest.json': manifest(name, version, 'agent', extra), 'prompt.md': prompt };
}

export function skillFiles(name: string, version: string, body = 'Do the thing well.'): Files {
  const short = name.split('/')[1];
  return {
    'manifest.json': manifest(name, version, 'skill', { description: `The ${short} skill` }),
    'SKILL.md': `---\nname: ${short}\ndescription: The ${short} skill.\n---\n\n${body}\n`,
  };
}

export function integrationFiles(name: string, version: string): Files {
  return { 'manifest.json': manifest(name, version, 'integration', { source: { kind: 'none' } }) };
}

export interface World {
  app: TestApp;
  org: BuiltOrg;
  /** the owner's key pinned to the default space */
  key: string;
  api: ReturnType<typeof client>;
  /** another key of the owner in the default space: a fresh rate-limit bucket (imports allow 10 a minute) */
  freshKey(): Promise<string>;
}

export async function aPackageWorld(opts: TestAppOptions = {}): Promise<World> {
  const app = await startTestApp(opts);
  const org = await anOrg(app.deps.database.pool);
  const { key } = await aKey(app.deps.database.pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
  const freshKey = async () => (await aKey(app.deps.database.pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId })).key;
  return { app, org, key, api: client(app.url, { key }), freshKey };
}

export interface Credentials {
  key?: string;
  cookie?: string;
  org?: string;
  space?: string;
}

/** POSTs bytes as the multipart field `file`, the way a browser or curl -F sends it. */
export async function upload(base: string, path: string, bytes: Buffer, who: Credentials, filename = 'package.afps'): Promise<WireResponse> {
  const form = new FormData();
  form.append('file', new Blob([bytes]), filename);
  const headers: Record<string, string> = {};
  if (who.key) headers.authorization = `Bearer ${who.key}`;
  if (who.cookie) headers.cookie = who.cookie;
  if (who.org) headers['x-org-id'] = who.org;
  if (who.space) headers['x-space-id'] = who.space;
  const res = await fetch(base + path, { method: 'POST', headers, body: form });
  const text = await res.text();
  const body = (res.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : text;
  return { status: res.status, headers: res.headers, body, text };
}

const rotation = new WeakMap<World, { key: string; used: number }>();

/** Imports as `who`, by default as the owner through keys rotated before the import rate limit bites. */
export async function importArchive(w: World, bytes: Buffer, who?: Credentials): Promise<WireResponse> {
  if (!who) {
    let current = rotation.get(w);
    if (!current || current.used >= 9) rotation.set(w, (current = { key: await w.freshKey(), used: 0 }));
    current.used++;
    who = { key: current.key };
  }
  return upload(w.app.url, '/api/packages/import', bytes, who);
}

/** GET returning raw bytes. */
export async function download(base: string, path: string, who: Credentials): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const headers: Record<string, string> = {};
  if (who.key) headers.authorization = `Bearer ${who.key}`;
  if (who.cookie) headers.cookie = who.cookie;
  if (who.org) headers['x-org-id'] = who.org;
  if (who.space) headers['x-space-id'] = who.space;
  const res = await fetch(base + path, { headers });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}
