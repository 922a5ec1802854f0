// One Node requirement, stated once and kept: the README's, package.json's engines, every package
// npm installs (none asks for a newer Node, so an install prints no EBADENGINE warning), and the
// Node CI runs on; and the OAuth library loads on it without its "Unsupported runtime" warning.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import semver from 'semver';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; engines?: { node?: string } | string[] }> };

test("the README states package.json's engines, and the running Node meets them", () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const stated = /needs nothing but Node\.js \((>= ?[\d.]+)/.exec(readme)?.[1];
  assert.ok(stated, 'the README states the Node it needs');
  assert.equal(stated.replace(' ', ''), pkg.engines.node);
  assert.ok(semver.satisfies(process.version, pkg.engines.node), `${process.version} does not meet ${pkg.engines.node}`);
});

test('no installed package asks for a Node newer than the lowest the platform supports', () => {
  const lowest = semver.minVersion(pkg.engines.node)!.version;
  const refusing = Object.entries(lock.packages)
    .filter(([name, p]) => name && p.engines && !Array.isArray(p.engines) && p.engines.node && !semver.satisfies(lowest, p.engines.node, { includePrerelease: true }))
    .map(([name, p]) => `${name}@${p.version} wants node ${(p.engines as { node: string }).node}`);
  assert.deepEqual(refusing, [], `npm would print EBADENGINE on Node ${lowest}`);
});

test('oidc-provider loads without its "Unsupported runtime" warning', () => {
  const loaded = spawnSync(process.execPath, ['--import', 'tsx', '-e', `import('./api/modules/oidc/library.ts').then(async (m) => { const lib = await m.loadOidcProvider(); console.warn('a warning of ours'); console.log(typeof lib.Provider); })`], {
    cwd: root, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' },
  });
  assert.equal(loaded.status, 0, loaded.stderr);
  assert.equal(loaded.stdout.trim(), 'function');
  assert.doesNotMatch(loaded.stderr, /Unsupported runtime/);
  assert.match(loaded.stderr, /a warning of ours/, 'other warnings still reach stderr');
});
