// The editable draft of a package: read it, edit files one by one, save it whole (If-Match
// required), publish it as a new version. Writers need <type>:write in the home space. Edits
// take the package row with NOWAIT: a second writer at the same moment gets 409 conflict.
import semver from 'semver';
import type pg from 'pg';
import {
  MANIFEST_FILE, isExactVersion, parseManifest, readPackageFiles, type Manifest, type PackageContents,
} from '../../../lib/afps/index.ts';
import { compareEntryNames, writeZip } from '../../../lib/zip/index.ts';
import { isProblem, problem, type FieldError } from '../../../lib/problem.ts';
import { requireHomeAuthority, type PackageScope } from './access.ts';
import {
  checkEditablePath, checkFileSize, checkIfMatch, checkNoShadowing, checkNotContentEntry, checkTreeSize, contentEntry,
  decodeContent, draftEtag, toFileRecord, treeSize, type FileRecord,
} from './draft-tree.ts';
import { packageReadOptions } from './import.ts';
import { draftSource, findPackage, headVersion, listVersions, readablePackage, versionManifest, type PackageRow, type VersionRow } from './rows.ts';
import { blobOf, listTree, putBlobs, readBlob, readTree, treeIntegrityOf, type Blob, type Queryable, type TreeEntry } from './store.ts';
import { inTransaction } from '../../../db/transaction.ts';
import { assertPublishable, insertVersion, type PublishedRef } from './versions.ts';

export interface DraftRecord {
  packageId: string;
  type: string;
  base_version: string | null;
  has_unarchived_changes: boolean;
  /** manifest.json of the draft (null when it is not a JSON object) */
  manifest: Record<string, unknown> | null;
  files: FileRecord[];
  etag: string;
  updatedAt: string;
}

export interface DraftReply {
  draft: DraftRecord;
  etag: string;
}

export type FileBody = string | { content: string; encoding?: 'utf8' | 'base64' };

async function manifestOf(q: Queryable, orgId: string, tree: Map<string, TreeEntry>): Promise<Record<string, unknown> | null> {
  const entry = tree.get(MANIFEST_FILE);
  if (!entry) return null;
  try {
    const raw: unknown = JSON.parse((await readBlob(q, orgId, entry.digest)).toString('utf8'));
    return raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

async function loadTree(q: Queryable, pkg: PackageRow): Promise<Map<string, TreeEntry>> {
  const entries = await listTree(q, pkg.orgId, pkg.id, draftSource(pkg));
  return new Map(entries.map((e) => [e.path, { ...e, size: Number(e.size) }]));
}

async function draftRecord(q: Queryable, pkg: PackageRow, tree: Map<string, TreeEntry>, versions: VersionRow[]): Promise<DraftReply> {
  const etag = draftEtag(pkg.draftIntegrity);
  const head = headVersion(versions);
  return {
    etag,
    draft: {
      packageId: pkg.id,
      type: pkg.type,
      base_version: pkg.draftBaseVersion,
      has_unarchived_changes: head !== undefined && head.integrity !== pkg.draftIntegrity,
      manifest: await manifestOf(q, pkg.orgId, tree),
      files: [...tree.values()].sort((a, b) => compareEntryNames(a.path, b.path)).map(toFileRecord),
      etag,
      updatedAt: pkg.draftUpdatedAt.toISOString(),
    },
  };
}

export async function getDraft(scope: PackageScope, id: string): Promise<DraftReply> {
  const pkg = await readablePackage(scope, id);
  const [tree, versions] = await Promise.all([loadTree(scope.pool, pkg), listVersions(scope.pool, scope.orgId, pkg.id)]);
  return draftRecord(scope.pool, pkg, tree, versions);
}

/** The current ETag of a package's draft (for restore and other conditional writes). */
export async function currentDraftEtag(scope: PackageScope, id: string): Promise<string> {
  const pkg = await readablePackage(scope, id);
  return draftEtag(pkg.draftIntegrity);
}

/**
 * Applies `change` to the draft tree under the row lock and writes the result: new blobs, the
 * draft's own rows (the draft becomes detached from its base version), its integrity.
 */
async function editDraft(
  scope: PackageScope, id: string, ifMatch: { header: string | undefined; required: boolean },
  change: (tree: Map<string, TreeEntry>, pkg: PackageRow) => Blob[] | Promise<Blob[]>,
): Promise<DraftReply> {
  const readable = await readablePackage(scope, id);
  await requireHomeAuthority(scope, readable, 'write');
  return inTransaction(scope.pool, async (tx: pg.PoolClient) => {
    const pkg = await findPackage(tx, scope.orgId, scope.spaceId, id, { lock: 'nowait' });
    if (!pkg) throw problem('package_not_found', { detail: `No package ${id} is reachable.` });
    checkIfMatch(ifMatch.header, draftEtag(pkg.draftIntegrity), ifMatch.required);
    const tree = await loadTree(tx, pkg);
    const before = treeSize(tree);
    const blobs = await change(tree, pkg);
    checkTreeSize(scope.config, before, treeSize(tree));

    await putBlobs(tx, scope.orgId, blobs);
    const entries = [...tree.values()];
    await tx.query('DELETE FROM package_draft_files WHERE org_id = $1 AND package_id = $2', [scope.orgId, id]);
    await tx.query(
      `INSERT INTO package_draft_files (org_id, package_id, path, digest, size)
       SELECT $1, $2, p, d, s FROM unnest($3::text[], $4::text[], $5::bigint[]) AS t(p, d, s)`,
      [scope.orgId, id, entries.map((e) => e.path), entries.map((e) => e.digest), entries.map((e) => e.size)],
    );
    const integrity = treeIntegrityOf(entries);
    const { rows } = await tx.query(
      `UPDATE packages SET draft_detached = true, draft_integrity = $3, draft_updated_at = now(), updated_at = now()
        WHERE org_id = $1 AND id = $2 RETURNING draft_updated_at`,
      [scope.orgId, id, integrity],
    );
    const updated: PackageRow = { ...pkg, draftDetached: true, draftIntegrity: integrity, draftUpdatedAt: rows[0].draft_updated_at };
    return draftRecord(tx, updated, tree, await listVersions(tx, scope.orgId, id));
  });
}

function fileEntry(scope: PackageScope, tree: Map<string, TreeEntry>, path: string, bytes: Buffer): Blob {
  checkFileSize(scope.config, path, bytes.length);
  checkNoShadowing(tree, path);
  const blob = blobOf(bytes);
  tree.set(path, { path, digest: blob.digest, size: bytes.length });
  return blob;
}

export async function putDraftFile(scope: PackageScope, id: string, body: { path: string; content: string; encoding?: 'utf8' | 'base64' }, ifMatch?: string): Promise<DraftReply> {
  checkEditablePath(body.path);
  const bytes = decodeContent(body.content, body.encoding);
  return editDraft(scope, id, { header: ifMatch, required: false }, (tree, pkg) => {
    if (bytes.toString('utf8').trim() === '') checkNotContentEntry(pkg.type, body.path, 'emptied');
    return [fileEntry(scope, tree, body.path, bytes)];
  });
}

export async function deleteDraftFile(scope: PackageScope, id: string, path: string, ifMatch?: string): Promise<DraftReply> {
  checkEditablePath(path);
  return editDraft(scope, id, { header: ifMatch, required: false }, (tree, pkg) => {
    checkNotContentEntry(pkg.type, path, 'removed');
    if (!tree.delete(path)) throw problem('not_found', { detail: `The draft has no file ${path}.` });
    return [];
  });
}

/** Moves a file, or every file under a folder, to a new path. */
export async function moveDraftFile(scope: PackageScope, id: string, body: { from: string; to: string }, ifMatch?: string): Promise<DraftReply> {
  const from = body.from.replace(/\/+$/, '');
  const to = body.to.replace(/\/+$/, '');
  checkEditablePath(from, 'from');
  checkEditablePath(to, 'to');
  return editDraft(scope, id, { header: ifMatch, required: false }, (tree, pkg) => {
    const moves: Array<[string, string]> = [];
    if (tree.has(from)) moves.push([from, to]);
    else for (const path of tree.keys()) if (path.startsWith(`${from}/`)) moves.push([path, to + path.slice(from.length)]);
    if (moves.length === 0) throw problem('not_found', { detail: `The draft has no file or folder ${from}.` });
    if (from === to) throw problem('path_conflict', { detail: `${to} is where the file already is.` });
    for (const [source, target] of moves) {
      checkNotContentEntry(pkg.type, source, 'renamed');
      checkEditablePath(target, 'to');
    }
    const moving = new Set(moves.map(([source]) => source));
    const entries = moves.map(([source, target]) => ({ ...tree.get(source)!, path: target }));
    for (const source of moving) tree.delete(source);
    for (const entry of entries) {
      if (tree.has(entry.path)) throw problem('path_conflict', { detail: `${entry.path} already exists.` });
      checkNoShadowing(tree, entry.path);
      tree.set(entry.path, entry);
    }
    return [];
  });
}

function draftManifestProblem(detail: string, errors?: FieldError[]) {
  return problem('invalid_draft_manifest', { detail, errors });
}

/** A draft manifest must be a valid manifest naming this package, of its type. */
export function checkDraftManifest(scope: PackageScope, pkg: { id: string; type: string }, raw: unknown): Manifest {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw draftManifestProblem('The manifest must be a JSON object.', [{ field: 'manifest', code: 'invalid_type', message: 'must be a JSON object' }]);
  }
  const named = (raw as Record<string, unknown>).name;
  if (named !== pkg.id) {
    throw draftManifestProblem(`The manifest must name ${pkg.id}.`, [{ field: 'manifest.name', code: 'invalid_value', message: `must be ${pkg.id}` }]);
  }
  let manifest: Manifest;
  try {
    manifest = parseManifest(raw, packageReadOptions(scope));
  } catch (err) {
    if (isProblem(err) && err.code === 'invalid_manifest') {
      throw draftManifestProblem(err.detail, err.errors?.map((e) => ({ ...e, field: `manifest.${e.field}`.replace(/^manifest\.manifest$/, 'manifest') })));
    }
    // an identity_claims JSONPath outside the subset keeps its code; its fields are named within the draft
    if (isProblem(err) && err.code === 'invalid_config') {
      throw problem('invalid_config', { detail: err.detail, errors: err.errors?.map((e) => ({ ...e, field: `manifest.${e.field}` })) });
    }
    throw err;
  }
  if (manifest.type !== pkg.type) {
    throw draftManifestProblem(`${pkg.id} is a ${pkg.type} package.`, [{ field: 'manifest.type', code: 'invalid_value', message: `must be ${pkg.type}` }]);
  }
  return manifest;
}

function manifestBytes(raw: unknown): Buffer {
  return Buffer.from(`${JSON.stringify(raw, null, 2)}\n`, 'utf8');
}

/** Saves the draft whole: the manifest, and when files is given, every other file. If-Match is required. */
export async function saveDraft(scope: PackageScope, id: string, body: { manifest: Record<string, unknown>; files?: Record<string, FileBody> }, ifMatch: string | undefined): Promise<DraftReply> {
  const files = body.files
    ? Object.entries(body.files).map(([path, value]) => {
      checkEditablePath(path, `files.${path}`);
      return [path, typeof value === 'string' ? Buffer.from(value, 'utf8') : decodeContent(value.content, value.encoding, `files.${path}.content`)] as const;
    })
    : undefined;
  return editDraft(scope, id, { header: ifMatch, required: true }, (tree, pkg) => {
    checkDraftManifest(scope, pkg, body.manifest);
    const blobs: Blob[] = [];
    if (files) {
      const entry = contentEntry(pkg.type);
      const given = files.find(([path]) => path === entry);
      if (entry && (!given || given[1].toString('utf8').trim() === '')) checkNotContentEntry(pkg.type, entry, given ? 'emptied' : 'removed');
      for (const path of [...tree.keys()]) if (path !== MANIFEST_FILE) tree.delete(path);
      for (const [path, bytes] of files) blobs.push(fileEntry(scope, tree, path, bytes));
    }
    const manifest = manifestBytes(body.manifest);
    const blob = blobOf(manifest);
    tree.set(MANIFEST_FILE, { path: MANIFEST_FILE, digest: blob.digest, size: manifest.length });
    blobs.push(blob);
    return blobs;
  });
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Same files (manifest.json aside) and the same manifest but for its version. */
async function sameAsVersion(q: Queryable, scope: PackageScope, pkg: PackageRow, contents: PackageContents, entries: TreeEntry[], version: VersionRow): Promise<boolean> {
  if (version.integrity === treeIntegrityOf(entries)) return true;
  const published = await listTree(q, scope.orgId, pkg.id, version.version);
  const strip = (list: TreeEntry[]) => list.filter((e) => e.path !== MANIFEST_FILE).map((e) => `${e.digest} ${e.path}`).sort().join('\n');
  if (strip(published) !== strip(entries)) return false;
  const publishedManifest = await versionManifest(q, scope.orgId, pkg.id, version.version);
  const withoutVersion = (m: Manifest) => canonicalJson({ ...m, version: undefined });
  return withoutVersion(publishedManifest) === withoutVersion(contents.manifest);
}

/**
 * The version a publish takes: the one asked for; else the draft manifest's version when it can
 * still be published; else the next patch after the highest published version.
 */
function chooseVersion(asked: string | undefined, draftVersion: unknown, versions: VersionRow[]): string {
  if (asked !== undefined) return asked;
  const head = headVersion(versions);
  if (typeof draftVersion === 'string' && isExactVersion(draftVersion) && (!head || semver.gt(draftVersion, head.version))) return draftVersion;
  if (!head) throw draftManifestProblem('The draft manifest has no usable version.', [{ field: 'manifest.version', code: 'invalid_format', message: 'must be a semver version' }]);
  return semver.inc(head.version, 'patch')!;
}

export async function publishDraft(scope: PackageScope, id: string, body: { version?: string }): Promise<PublishedRef> {
  if (body.version !== undefined && !isExactVersion(body.version)) {
    throw problem('validation_failed', { detail: 'version must be a semver version.', errors: [{ field: 'version', code: 'invalid_format', message: 'must be a semver version such as 1.2.0' }] });
  }
  const readable = await readablePackage(scope, id);
  await requireHomeAuthority(scope, readable, 'write');
  return inTransaction(scope.pool, async (tx) => {
    const pkg = await findPackage(tx, scope.orgId, scope.spaceId, id, { lock: 'nowait' });
    if (!pkg) throw problem('package_not_found', { detail: `No package ${id} is reachable.` });
    const files = await readTree(tx, scope.orgId, id, draftSource(pkg));
    const versions = await listVersions(tx, scope.orgId, id);
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(files.get(MANIFEST_FILE)?.toString('utf8') ?? 'null');
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new SyntaxError('not an object');
    } catch {
      throw draftManifestProblem('The draft has no manifest.json object.', [{ field: 'manifest', code: 'invalid_manifest', message: 'must be a JSON object' }]);
    }
    const version = chooseVersion(body.version, raw.version, versions);
    if (raw.version !== version) files.set(MANIFEST_FILE, manifestBytes({ ...raw, version }));
    checkDraftManifest(scope, pkg, { ...raw, version });

    let contents: PackageContents;
    try {
      contents = readPackageFiles(files, packageReadOptions(scope));
    } catch (err) {
      if (isProblem(err) && err.code === 'invalid_manifest') throw draftManifestProblem(err.detail, err.errors);
      throw err;
    }
    const entries = [...files].map(([path, bytes]) => ({ path, ...blobOf(bytes), size: bytes.length }));
    const head = headVersion(versions);
    if (head && (await sameAsVersion(tx, scope, pkg, contents, entries, head))) {
      throw problem('no_changes', { detail: `The draft of ${id} holds nothing ${head.version} does not.` });
    }
    assertPublishable(id, version, versions);
    return insertVersion(tx, scope, pkg, { version, manifest: contents.manifest, files, archive: writeZip(files) }, versions, { resetDraft: true });
  });
}
