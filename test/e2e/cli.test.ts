// The command-line client (cli/) run as a person and a script would: as child processes of
// `node bin/agent-platform.mjs` (the package's bin) against one started platform. A person signs
// in with the device flow, approving the code on the instance's own device page (driven over HTTP
// as a browser would); a run is launched and followed to success with its output; --json is
// parsed; refused calls give their problem line and exit code; an expired access token is
// refreshed; logout revokes the refresh token so a later refresh is refused. login asks for the
// scopes of every command but keys (fewer with --scopes); keys signs in with a password session.
// A run failed after a completed step is resumed to success (`runs resume --wait`); a run's tool
// call waiting for approval is listed, approved and, on another run, rejected with a reason.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildFixtureArchive } from '../fixtures/build-packages.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { Browser } from '../integration/oidc-harness.ts';
import { importForecastAgent, importWeatherIntegration, startWeatherUpstream, type WeatherUpstream } from '../support/approval-agent.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, waitForStatus } from '../support/runs.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const BIN = join(ROOT, 'bin/agent-platform.mjs');
const OWNER = { email: 'owner@example.test', password: 'a long enough passphrase' };
/** what `login` asks by default: the routes of every command but keys (api/routes) */
const CLI_SCOPES = [
  'spaces:read', 'agents:read', 'agents:write', 'agents:run', 'skills:read', 'skills:write', 'mcp-servers:read', 'mcp-servers:write',
  'integrations:read', 'integrations:write', 'runs:read', 'runs:cancel', 'runs:approve', 'files:read', 'schedules:read', 'schedules:write',
];

let platform: PlatformProcess;
let fake: Awaited<ReturnType<typeof startFakeModel>>;
let weather: WeatherUpstream;
let dir: string;
let key: string;
let orgId: string;
let spaceId: string;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI with these arguments; its configuration lives in the test's folder. */
function cli(args: string[], env: Record<string, string> = {}, onStdout?: (text: string) => void): { done: Promise<Ran>; kill(): void } {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: join(dir, 'config'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d;
    onStdout?.(stdout);
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const done = new Promise<Ran>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { done, kill: () => child.kill('SIGKILL') };
}

const run = (args: string[], env: Record<string, string> = {}) => cli(args, env).done;
const configPath = () => join(dir, 'config/agent-platform/config.json');
const config = () => JSON.parse(readFileSync(configPath(), 'utf8'));

before(async () => {
  [fake, weather] = await Promise.all([startFakeModel(), startWeatherUpstream()]);
  platform = await startPlatformProcess({ env: { SANDBOX_WARM_POOL: '1', EGRESS_ALLOW_INTERNAL_HOSTS: [new URL(fake.url).host, weather.host].join(',') } });
  dir = mkdtempSync(join(tmpdir(), 'cli-e2e-'));
  const anon = client(platform.url);
  const redeem = await anon.post('/api/auth/bootstrap/redeem', { token: 'process-bootstrap-token-0123456789', ...OWNER, name: 'Owner' });
  assert.equal(redeem.status, 201, redeem.text);
  orgId = redeem.body.org_id;
  spaceId = redeem.body.space_id;
  const cookie = redeem.headers.get('set-cookie')!.split(';')[0];
  const keyRes = await client(platform.url, { cookie, org: orgId, space: spaceId }).post('/api/api-keys', { name: 'ci' });
  assert.equal(keyRes.status, 201, keyRes.text);
  key = keyRes.body.key;
  await aDefaultModel(platform.url, key, fake.url);
});

after(async () => {
  await platform?.stop();
  await fake?.close();
  await weather?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a script with an API key imports a package and lists it as JSON; refused calls print code: detail (request_id) with the exit code of their class', async () => {
  const archive = join(dir, 'agent-echo.afps');
  writeFileSync(archive, buildFixtureArchive('agent-echo'));
  const env = { AGENT_PLATFORM_URL: platform.url, AGENT_PLATFORM_API_KEY: key };
  const imported = await run(['packages', 'import', archive, '--json'], env);
  assert.equal(imported.code, 0, imported.stderr + imported.stdout);
  assert.equal(JSON.parse(imported.stdout).packageId, '@fixtures/agent-echo');

  const listed = await run(['agents', 'list', '--json'], env);
  assert.equal(listed.code, 0, listed.stderr);
  const agents = JSON.parse(listed.stdout);
  assert.equal(agents.object, 'list');
  assert.ok(agents.data.some((a: { packageId: string }) => a.packageId === '@fixtures/agent-echo'), listed.stdout);
  // for people: a table, no colour when stdout is not a terminal
  const table = await run(['agents', 'list'], env);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^AGENT +LATEST +PLACEMENT +DESCRIPTION$/m);
  assert.match(table.stdout, /^@fixtures\/agent-echo +\S+ +home\b/m);
  assert.doesNotMatch(table.stdout, /\u001b\[/);

  // 404: another 4xx, exit 4, the problem on stderr as code: detail (request_id)
  const missing = await run(['agents', 'run', '@fixtures/no-such-agent', '--input', '{}'], env);
  assert.equal(missing.code, 4, missing.stderr);
  assert.match(missing.stderr, /^agent_not_found: .+ \(req_[^)]+\)$/m);
  assert.equal(missing.stdout, '');
  // 401: a revoked or unknown key, exit 3; with --json the problem document on stdout
  const refused = await run(['runs', 'list', '--json'], { ...env, AGENT_PLATFORM_API_KEY: 'apst_not_a_real_key_0000000000000000' });
  assert.equal(refused.code, 3, refused.stdout + refused.stderr);
  const problem = JSON.parse(refused.stdout);
  assert.equal(problem.status, 401);
  assert.match(problem.request_id, /^req_/);
  // a usage error never reaches the instance: exit 2
  const usage = await run(['agents', 'run', '@fixtures/agent-echo', '--input', '[1]'], env);
  assert.equal(usage.code, 2, usage.stderr);
  assert.match(usage.stderr, /--input must be a JSON object/);
  // the instance down: exit 6
  const down = await run(['runs', 'list'], { ...env, AGENT_PLATFORM_URL: 'http://127.0.0.1:9' });
  assert.equal(down.code, 6, down.stderr);
  assert.match(down.stderr, /^unreachable: /m);
});

test('login: the device flow approved on the instance\'s own device page stores the tokens (0600), then a run is launched and followed to success with its output', async () => {
  let seen: { uri: string; code: string } | undefined;
  let announced!: () => void;
  const shown = new Promise<void>((r) => (announced = r));
  const login = cli(['login', '--url', platform.url], {}, (text) => {
    const m = /open (\S+) and enter the code (\S+)/.exec(text);
    if (m && !seen) {
      seen = { uri: m[1], code: m[2] };
      announced();
    }
  });
  const early = await Promise.race([shown.then(() => null), login.done]);
  assert.equal(early, null, `login ended before showing a code: ${JSON.stringify(early)}`);
  assert.ok(seen!.uri.startsWith(`${platform.url}/api/auth/device`), seen!.uri);
  assert.match(seen!.code, /^[A-Z]{4}-[A-Z]{4}$/);

  const browser = new Browser();
  await browser.walk(seen!.uri, OWNER, 'http://never', { userCode: seen!.code });
  assert.match(browser.lastPage()?.html ?? '', /Your device is signed in/, browser.lastPage()?.html);
  // the consent page lists what login asks: the scopes of every command but keys, none of keys'
  const consent = browser.pages.find((p) => p.html.includes('<code>runs:read</code>'))?.html ?? '';
  for (const scope of CLI_SCOPES) assert.ok(consent.includes(`<code>${scope}</code>`), `consent lists ${scope}`);
  assert.doesNotMatch(consent, /api-keys:/);
  const loggedIn = await login.done;
  assert.equal(loggedIn.code, 0, loggedIn.stderr + loggedIn.stdout);
  assert.match(loggedIn.stdout, new RegExp(`Organization ${orgId}, space ${spaceId}`));

  assert.equal(statSync(configPath()).mode & 0o777, 0o600);
  assert.equal(statSync(join(dir, 'config/agent-platform')).mode & 0o777, 0o700);
  const saved = config();
  assert.equal(saved.url, platform.url);
  assert.ok(saved.instances[platform.url].tokens.refresh_token, 'a refresh token is kept');
  assert.deepEqual(saved.instances[platform.url].tokens.scope.split(' ').filter((x: string) => x.includes(':')).sort(), [...CLI_SCOPES].sort(), 'the token carries the scopes asked');

  const who = await run(['whoami', '--json']);
  assert.equal(who.code, 0, who.stderr);
  const me = JSON.parse(who.stdout);
  assert.equal(me.auth, 'oauth');
  assert.equal(me.org, orgId);
  assert.ok(me.orgs.some((o: { id: string }) => o.id === orgId));

  // the agent is the one the API-key test imported into the same space
  const followed = await run(['agents', 'run', '@fixtures/agent-echo', '--input', '{"message":"hello from the cli"}', '--follow']);
  assert.equal(followed.code, 0, `${followed.stderr}\n${followed.stdout}\n${platform.output().slice(-3000)}`);
  assert.match(followed.stdout, /^status: +success$/m);
  assert.match(followed.stdout, /"echo": "[^"]+"/);
  const runId = /^id: +(run_\S+)$/m.exec(followed.stdout)![1];

  const waited = await run(['agents', 'run', '@fixtures/agent-echo', '--input', '{"message":"again"}', '--wait', '--json']);
  assert.equal(waited.code, 0, waited.stderr);
  const ended = JSON.parse(waited.stdout);
  assert.equal(ended.object, 'run');
  assert.equal(ended.status, 'success');
  assert.equal(typeof (ended.result.output as { echo: unknown }).echo, 'string');

  const runs = await run(['runs', 'list', '--status', 'success', '--json']);
  assert.equal(runs.code, 0, runs.stderr);
  const ids = JSON.parse(runs.stdout).data.map((r: { id: string }) => r.id);
  assert.ok(ids.includes(runId) && ids.includes(ended.id), runs.stdout);

  const logs = await run(['runs', 'logs', runId, '--json']);
  assert.equal(logs.code, 0, logs.stderr);
  const entries = logs.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(entries.length > 0);
  assert.deepEqual(entries.map((e) => e.sequence), [...entries.map((e) => e.sequence)].sort((a, b) => a - b));
});

test('login --scopes asks for fewer: the consent page lists only those, the token carries only those, and what they do not cover is refused (exit 3)', async () => {
  const bad = await run(['login', '--url', platform.url, '--scopes', 'runs read']);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /--scopes: runs read is not a scope/);

  const own = { XDG_CONFIG_HOME: join(dir, 'narrow') };
  let seen: { uri: string; code: string } | undefined;
  let announced!: () => void;
  const shown = new Promise<void>((r) => (announced = r));
  const login = cli(['login', '--url', platform.url, '--scopes', 'runs:read', '--json'], own, (text) => {
    const first = text.split('\n')[0];
    if (text.includes('\n') && !seen) {
      const started = JSON.parse(first);
      seen = { uri: started.verification_uri, code: started.user_code };
      announced();
    }
  });
  const early = await Promise.race([shown.then(() => null), login.done]);
  assert.equal(early, null, `login ended before showing a code: ${JSON.stringify(early)}`);
  const browser = new Browser();
  await browser.walk(seen!.uri, OWNER, 'http://never', { userCode: seen!.code });
  const consent = browser.pages.find((p) => p.html.includes('<code>runs:read</code>'))?.html ?? '';
  assert.ok(consent, 'the consent page lists runs:read');
  assert.deepEqual([...consent.matchAll(/<code>([a-z-]+:[a-z-]+)<\/code>/g)].map((m) => m[1]), ['runs:read']);
  const loggedIn = await login.done;
  assert.equal(loggedIn.code, 0, loggedIn.stderr + loggedIn.stdout);
  const summary = JSON.parse(loggedIn.stdout.slice(loggedIn.stdout.indexOf('\n') + 1));
  assert.deepEqual(summary.scope.split(' ').filter((x: string) => x.includes(':')), ['runs:read']);
  assert.equal(summary.org, orgId);
  assert.equal(summary.space, null, 'no default space without spaces:read');

  const listed = await run(['runs', 'list', '--space', spaceId, '--json'], own);
  assert.equal(listed.code, 0, listed.stderr);
  const launch = await run(['agents', 'run', '@fixtures/agent-echo', '--space', spaceId, '--input', '{"message":"x"}'], own);
  assert.equal(launch.code, 3, launch.stderr);
  assert.match(launch.stderr, /^forbidden: .*agents:run.* \(req_[^)]+\)$/m);
  assert.equal((await run(['logout'], own)).code, 0);
});

test('signed in: keys create|list|revoke with a password session (a token alone is a usage error), runs rerun, schedules create|list|disable, packages download', async () => {
  // API keys are managed by a signed-in person, never by a token or a key: the login's token alone
  // (or an API key) is told so before any request, exit 2
  for (const env of [{}, { AGENT_PLATFORM_API_KEY: key }] as Array<Record<string, string>>) {
    const tokenOnly = await run(['keys', 'list'], env);
    assert.equal(tokenOnly.code, 2, tokenOnly.stderr + tokenOnly.stdout);
    assert.match(tokenOnly.stderr, /keys needs a signed-in session: API keys are managed by a signed-in person, never by a token or a key\. Pass --email/);
  }
  const noPassword = await run(['keys', 'list', '--email', OWNER.email]);
  assert.equal(noPassword.code, 2, noPassword.stderr);
  assert.match(noPassword.stderr, /Set AGENT_PLATFORM_PASSWORD \(stdin is not a terminal/);
  const wrong = await run(['keys', 'list', '--email', OWNER.email], { AGENT_PLATFORM_PASSWORD: 'not the passphrase' });
  assert.equal(wrong.code, 3, wrong.stderr);

  const password = { AGENT_PLATFORM_PASSWORD: OWNER.password };
  const person = { ...password, AGENT_PLATFORM_EMAIL: OWNER.email };
  const created = await run(['keys', 'create', '--email', OWNER.email, '--name', 'from the cli', '--scopes', 'runs:read', '--json'], password);
  assert.equal(created.code, 0, created.stderr + created.stdout);
  const k = JSON.parse(created.stdout);
  assert.deepEqual(k.scopes, ['runs:read']);
  const keys = await run(['keys', 'list', '--json'], person);
  assert.equal(keys.code, 0, keys.stderr);
  assert.ok(JSON.parse(keys.stdout).data.some((x: { id: string }) => x.id === k.id), keys.stdout);
  const withKey = { AGENT_PLATFORM_API_KEY: k.key };
  assert.equal((await run(['runs', 'list'], withKey)).code, 0);
  // the key holds runs:read only: a launch is refused with 403, exit 3
  const launch = await run(['agents', 'run', '@fixtures/agent-echo', '--input', '{"message":"x"}'], withKey);
  assert.equal(launch.code, 3, launch.stderr);
  assert.match(launch.stderr, /^forbidden: .+ \(req_[^)]+\)$/m);
  const revoked = await run(['keys', 'revoke', k.id], person);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal((await run(['runs', 'list'], withKey)).code, 3, 'a revoked key is refused');

  const last = JSON.parse((await run(['runs', 'list', '--limit', '1', '--json'])).stdout).data[0];
  const rerun = await run(['runs', 'rerun', last.id, '--wait', '--json']);
  assert.equal(rerun.code, 0, rerun.stderr);
  const again = JSON.parse(rerun.stdout);
  assert.equal(again.rerun_of, last.id);
  assert.deepEqual(again.input, last.input);
  assert.equal(again.status, 'success');

  const schedule = await run(['schedules', 'create', '@fixtures/agent-echo', '--name', 'nightly', '--cron', '0 3 * * *', '--input', '{"message":"night"}', '--json']);
  assert.equal(schedule.code, 0, schedule.stderr + schedule.stdout);
  const sch = JSON.parse(schedule.stdout);
  assert.equal(sch.enabled, true);
  assert.ok(JSON.parse((await run(['schedules', 'list', '--json'])).stdout).data.some((x: { id: string }) => x.id === sch.id));
  const disabled = await run(['schedules', 'disable', sch.id, '--json']);
  assert.equal(disabled.code, 0, disabled.stderr);
  assert.equal(JSON.parse(disabled.stdout).enabled, false);

  const file = join(dir, 'downloaded.afps');
  const downloaded = await run(['packages', 'download', '@fixtures/agent-echo', '--output', file]);
  assert.equal(downloaded.code, 0, downloaded.stderr);
  assert.equal(readFileSync(file).subarray(0, 2).toString(), 'PK', 'a zip archive');
});

test('runs cancel ends a run being followed, whose follower exits 12; a run failed by its model exits 10 under --wait', async () => {
  fake.setLatency(30_000);
  try {
    const launched = await run(['agents', 'run', '@fixtures/agent-echo', '--input', '{"message":"slow"}']);
    assert.equal(launched.code, 0, launched.stderr);
    const id = launched.stdout.trim();
    assert.match(id, /^run_\S+$/);
    const follower = cli(['runs', 'logs', id, '--follow']);
    const cancelled = await run(['runs', 'cancel', id, '--json']);
    assert.equal(cancelled.code, 0, cancelled.stderr + cancelled.stdout);
    assert.equal(JSON.parse(cancelled.stdout).status, 'cancelled');
    const followed = await follower.done;
    assert.equal(followed.code, 12, followed.stderr);
    assert.match(followed.stderr, /cancelled/);
  } finally {
    fake.setLatency(0);
  }
  fake.setOutage(true);
  try {
    const failed = await run(['agents', 'run', '@fixtures/agent-echo', '--input', '{"message":"down"}', '--wait']);
    assert.equal(failed.code, 10, failed.stdout + failed.stderr);
    assert.match(failed.stdout, /^status: +failed$/m);
  } finally {
    fake.setOutage(false);
  }
});

test('an expired access token is refreshed once by two commands started together (the rotated refresh token saved); logout revokes the refresh token, and a later refresh is refused', async () => {
  const before = config();
  const tokens = before.instances[platform.url].tokens;
  tokens.expires_at = 0;
  writeFileSync(configPath(), JSON.stringify(before));
  // a refresh waits for the lock another command holds (spending a rotated refresh token twice
  // would end the grant): held here, two commands started together refresh nothing meanwhile;
  // released, one refreshes and the other uses what it saved
  const lock = `${configPath()}.lock`;
  writeFileSync(lock, '');
  const one = cli(['whoami']);
  const two = cli(['runs', 'list']);
  const early = await Promise.race([one.done, two.done, new Promise((r) => setTimeout(() => r('waiting'), 3000))]);
  assert.equal(early, 'waiting', 'both wait for the lock');
  assert.equal(config().instances[platform.url].tokens.refresh_token, tokens.refresh_token, 'nothing refreshed while the lock is held');
  rmSync(lock);
  const [ran1, ran2] = await Promise.all([one.done, two.done]);
  assert.equal(ran1.code, 0, ran1.stderr);
  assert.equal(ran2.code, 0, ran2.stderr);
  const refreshed = config().instances[platform.url].tokens;
  assert.equal((await run(['whoami'])).code, 0, 'the grant is still alive');
  assert.ok(refreshed.expires_at > Date.now());
  assert.notEqual(refreshed.refresh_token, tokens.refresh_token, 'the provider rotated the refresh token');
  assert.equal(statSync(configPath()).mode & 0o777, 0o600);

  const out = await run(['logout']);
  assert.equal(out.code, 0, out.stderr);
  assert.equal(config().instances[platform.url].tokens, undefined);
  const again = await fetch(`${platform.url}/api/auth/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshed.refresh_token, client_id: 'agent-platform-cli' }),
  });
  assert.equal(again.status, 400);
  assert.equal(((await again.json()) as { error: string }).error, 'invalid_grant');
  // the grant has ended: its last access token is refused too
  const stale = await fetch(`${platform.url}/api/runs`, { headers: { authorization: `Bearer ${refreshed.access_token}`, 'x-org-id': orgId, 'x-space-id': spaceId } });
  assert.equal(stale.status, 401);
  const after = await run(['runs', 'list']);
  assert.equal(after.code, 3, after.stderr);
  assert.match(after.stderr, /^not_signed_in: /m);
});

test('bash completion completes commands, subcommands and the flags of the command typed', () => {
  const script = spawnSync(process.execPath, [BIN, 'completion', 'bash'], { encoding: 'utf8' });
  assert.equal(script.status, 0, script.stderr);
  const complete = (line: string[]) => {
    const words = line.map((w) => `'${w}'`).join(' ');
    const r = spawnSync('bash', ['-c', `${script.stdout}\nCOMP_WORDS=(${words}); COMP_CWORD=${line.length - 1}; _agent_platform; echo "\${COMPREPLY[*]}"`], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim().split(/\s+/);
  };
  assert.deepEqual(complete(['agent-platform', 'ru']), ['runs']);
  assert.deepEqual(complete(['agent-platform', 'runs', 'l']).sort(), ['list', 'logs']);
  assert.ok(complete(['agent-platform', 'agents', 'run', '@a/b', '--']).includes('--follow'));
  assert.deepEqual(complete(['agent-platform', 'runs', 'list', '--status', 'su']), ['success']);
  assert.deepEqual(complete(['agent-platform', 'runs', 'appr']).sort(), ['approvals', 'approve']);
  assert.ok(complete(['agent-platform', 'runs', 'reject', 'run_1', 'apr_1', '--']).includes('--reason'));
  const zsh = spawnSync(process.execPath, [BIN, 'completion', 'zsh'], { encoding: 'utf8' });
  assert.equal(zsh.status, 0);
  assert.match(zsh.stdout, /^#compdef agent-platform/);
});

test('npx agent-platform from the repository runs the package\'s bin', () => {
  const r = spawnSync('npx', ['--offline', 'agent-platform', '--help'], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: dir, npm_config_update_notifier: 'false', npm_config_offline: 'true' } });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^usage: agent-platform <command>/m);
  assert.match(r.stdout, /^ {2}runs approve RUN_ID APPROVAL_ID \[--reason\]$/m);
});

test('runs logs --follow: a dropped stream is reconnected and what was logged meanwhile is caught up from since, each entry once, in order', async () => {
  // a stand-in instance whose stream drops after the first entry; entries 2 and 3 are logged
  // while no stream is open, 4 arrives on the second stream, then the run ends
  const entry = (n: number) => ({ sequence: n, level: 'info', message: `step ${n}`, createdAt: new Date().toISOString() });
  let logged = 1;
  let status = 'running';
  let streams = 0;
  await withStandIn((req, res) => {
    const url = new URL(req.url!, 'http://x');
    assert.equal(req.headers.authorization, 'Bearer apst_stand_in');
    if (url.pathname === '/api/realtime/runs/run_1') {
      streams++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: run_update\ndata: ${JSON.stringify({ id: 'run_1', status })}\n\n`);
      if (streams === 1) {
        res.write(`event: run_log\ndata: ${JSON.stringify(entry(1))}\n\n`);
        setTimeout(() => {
          logged = 3;
          res.destroy();
        }, 100);
      } else {
        logged = 4;
        res.write(`event: run_log\ndata: ${JSON.stringify(entry(4))}\n\n`);
        status = 'success';
        res.end(`event: run_update\ndata: ${JSON.stringify({ id: 'run_1', status })}\n\n`);
      }
      return;
    }
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/api/runs/run_1/logs') {
      const since = Number(url.searchParams.get('since'));
      const data = Array.from({ length: logged }, (_, i) => entry(i + 1)).filter((e) => e.sequence > since);
      res.end(JSON.stringify({ object: 'list', data, hasMore: false, limit: 1000, next_since: data.at(-1)?.sequence ?? since }));
    } else if (url.pathname === '/api/runs/run_1') {
      res.end(JSON.stringify({ id: 'run_1', object: 'run', status }));
    } else {
      res.statusCode = 404;
      res.end(JSON.stringify({ code: 'not_found', detail: 'no', request_id: 'req_x' }));
    }
  }, async (base) => {
    const followed = await run(['runs', 'logs', 'run_1', '--follow', '--json', '--url', base, '--api-key', 'apst_stand_in']);
    assert.equal(followed.code, 0, followed.stderr);
    assert.deepEqual(followed.stdout.trim().split('\n').map((l) => JSON.parse(l).sequence), [1, 2, 3, 4]);
    assert.equal(streams, 2);
    assert.match(followed.stderr, /reconnecting \(1\)/);
  });
});

test('keys signs out of its password session even when the call is refused, having sent the cookie with the organization and space', async () => {
  // a stand-in instance: sign-in sets a cookie, the key list is refused, sign-out is recorded
  const seen: Array<{ path: string; cookie?: string; org?: string; space?: string }> = [];
  await withStandIn((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    seen.push({ path, cookie: req.headers.cookie, org: req.headers['x-org-id'] as string, space: req.headers['x-space-id'] as string });
    res.setHeader('content-type', 'application/json');
    if (path === '/api/auth/sign-in/email') {
      res.setHeader('set-cookie', 'ap.session_token=s3cret; Path=/; HttpOnly; SameSite=Lax');
      res.end(JSON.stringify({ user: { id: 'u' }, session: { id: 's' } }));
    } else if (path === '/api/api-keys') {
      res.statusCode = 403;
      res.end(JSON.stringify({ code: 'forbidden', status: 403, detail: 'no', request_id: 'req_stand_in' }));
    } else if (path === '/api/auth/sign-out') {
      res.statusCode = 204;
      res.end();
    } else {
      res.statusCode = 404;
      res.end(JSON.stringify({ code: 'not_found', detail: 'no', request_id: 'req_x' }));
    }
  }, async (base) => {
    const listed = await run(['keys', 'list', '--url', base, '--org', orgId, '--space', 'spc_1', '--email', 'a@example.test'], { AGENT_PLATFORM_PASSWORD: 'pw' });
    assert.equal(listed.code, 3, listed.stderr);
    assert.match(listed.stderr, /^forbidden: no \(req_stand_in\)$/m);
    assert.deepEqual(seen.map((x) => x.path), ['/api/auth/sign-in/email', '/api/api-keys', '/api/auth/sign-out']);
    assert.deepEqual(seen[1], { path: '/api/api-keys', cookie: 'ap.session_token=s3cret', org: orgId, space: 'spc_1' });
    assert.equal(seen[2].cookie, 'ap.session_token=s3cret');
  });
});

/** The scripted model (the forecast agents' script), made beside the default model, which stays the default. */
async function aScriptedModel(): Promise<string> {
  const api = client(platform.url, { key });
  const defaultId = (await api.get('/api/models')).body.data.find((m: { is_default: boolean }) => m.is_default).id;
  const script = await aDefaultModel(platform.url, key, fake.url, 'fake-script');
  assert.equal((await api.patch(`/api/models/${defaultId}`, { is_default: true })).status, 200);
  return script;
}

let scripted: Promise<string> | undefined;
const scriptedModel = () => (scripted ??= aScriptedModel());
let weatherImported: Promise<void> | undefined;
const weatherIntegration = () => (weatherImported ??= importWeatherIntegration(platform.url, key, weather));

test('runs resume RUN_ID --wait: a run failed after a completed step goes on from its checkpoint to success, the step not made again', async () => {
  const env = { AGENT_PLATFORM_URL: platform.url, AGENT_PLATFORM_API_KEY: key };
  const api = client(platform.url, { key });
  const model = await scriptedModel();
  await weatherIntegration();
  await importForecastAgent(platform.url, key, '@acme/resumable', 'Bergen', false);
  // the forecast (a completed step) starts a model outage: the run's next model call fails until it ends failed
  weather.onCall = () => fake.setOutage(true);
  let failedId: string;
  try {
    const launched = await api.post('/api/agents/@acme/resumable/run', { input: {}, model_id: model });
    assert.equal(launched.status, 201, launched.text);
    failedId = launched.body.id;
    const failed = await waitForStatus(api, failedId, (s) => s !== 'pending' && s !== 'running', 120_000);
    assert.equal(failed.status, 'failed', JSON.stringify(failed));
  } finally {
    weather.onCall = undefined;
    fake.setOutage(false);
  }
  assert.deepEqual(weather.calls, ['Bergen']);

  const resumed = await run(['runs', 'resume', failedId, '--wait', '--json'], env);
  assert.equal(resumed.code, 0, resumed.stderr + resumed.stdout);
  const ran = JSON.parse(resumed.stdout);
  assert.equal(ran.status, 'success');
  assert.equal(ran.resumed_from, failedId);
  assert.notEqual(ran.id, failedId);
  assert.deepEqual(ran.result.output, { forecast: 'Sunny in Bergen' });
  assert.deepEqual(weather.calls, ['Bergen'], 'the completed forecast was not asked again');
  // for people: the new run named, its ending and output; a run that succeeded is not resumable (exit 4)
  const refused = await run(['runs', 'resume', ran.id], env);
  assert.equal(refused.code, 4, refused.stdout + refused.stderr);
  assert.match(refused.stderr, /^run_not_resumable: .+ \(req_[^)]+\)$/m);
});

test('runs approvals lists the tool call a run waits on; runs approve lets it run (the run succeeds), runs reject refuses another with its reason', async () => {
  const env = { AGENT_PLATFORM_URL: platform.url, AGENT_PLATFORM_API_KEY: key };
  const api = client(platform.url, { key });
  const model = await scriptedModel();
  await weatherIntegration();
  await importForecastAgent(platform.url, key, '@acme/forecaster', 'Tromso');
  const pendingOf = async (runId: string) => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const pending = (await api.get(`/api/runs/${runId}/approvals`)).body.data.find((a: { status: string }) => a.status === 'pending');
      if (pending) return pending;
      if (Date.now() > deadline) throw new Error(`no pending approval of ${runId}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const launch = async () => {
    const launched = await api.post('/api/agents/@acme/forecaster/run', { input: {}, model_id: model });
    assert.equal(launched.status, 201, launched.text);
    return launched.body.id as string;
  };
  // both runs at once: their sandboxes start together
  const [first, second] = await Promise.all([launch(), launch()]);
  const [pending, other] = await Promise.all([pendingOf(first), pendingOf(second)]);

  const listed = await run(['runs', 'approvals', first, '--json'], env);
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual(JSON.parse(listed.stdout).data.map((a: any) => [a.id, a.tool, a.arguments, a.status]), [[pending.id, 'public_weather__forecast', { city: 'Tromso' }, 'pending']]);
  const table = await run(['runs', 'approvals', first], env);
  assert.match(table.stdout, /^APPROVAL +TOOL +STATUS +REQUESTED +ARGUMENTS +REASON$/m);
  assert.match(table.stdout, new RegExp(`^${pending.id} +public_weather__forecast +pending +\\S+ \\S+ +\\{"city":"Tromso"\\}$`, 'm'));
  assert.ok(!weather.calls.includes('Tromso'), 'the upstream waits for the decision');
  const approved = await run(['runs', 'approve', first, pending.id], env);
  assert.equal(approved.code, 0, approved.stderr);
  assert.equal(approved.stdout.trim(), `${pending.id} approved (public_weather__forecast)`);
  const rejected = await run(['runs', 'reject', second, other.id, '--reason', 'not today', '--json'], env);
  assert.equal(rejected.code, 0, rejected.stderr);
  assert.deepEqual([JSON.parse(rejected.stdout).status, JSON.parse(rejected.stdout).reason], ['rejected', 'not today']);

  const [succeeded, ended] = await Promise.all([run(['runs', 'show', first, '--wait', '--json'], env), run(['runs', 'show', second, '--wait', '--json'], env)]);
  assert.equal(succeeded.code, 0, succeeded.stderr + succeeded.stdout);
  assert.deepEqual(JSON.parse(succeeded.stdout).result.output, { forecast: 'Sunny in Tromso' });
  assert.equal(ended.code, 0, ended.stderr + ended.stdout);
  assert.match(JSON.parse(ended.stdout).result.output.forecast, /rejected.*not today/);
  // decided: another decision is a conflict (exit 4)
  const again = await run(['runs', 'reject', first, pending.id], env);
  assert.equal(again.code, 4, again.stderr);
  assert.match(again.stderr, /^(approval_already_decided|run_not_running): .+ \(req_[^)]+\)$/m);
  assert.deepEqual(weather.calls.filter((c) => c === 'Tromso'), ['Tromso'], 'the rejected call never reached the upstream');
});

test('use saves the default organization and space for the instance (0600), refusing a malformed id; agents show; agents run --input-file --wait prints the ending and output', async () => {
  const used = await run(['use', '--url', platform.url, '--org', orgId, '--space', spaceId, '--json']);
  assert.equal(used.code, 0, used.stderr);
  assert.deepEqual(JSON.parse(used.stdout), { url: platform.url, org: orgId, space: spaceId });
  assert.deepEqual([config().url, config().instances[platform.url].org, config().instances[platform.url].space], [platform.url, orgId, spaceId]);
  assert.equal(statSync(configPath()).mode & 0o777, 0o600);
  const bad = await run(['use', '--org', 'not-an-org']);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /--org takes an organization id/);
  assert.equal(config().instances[platform.url].org, orgId, 'a refused use changes nothing');

  const env = { AGENT_PLATFORM_URL: platform.url, AGENT_PLATFORM_API_KEY: key };
  const shown = await run(['agents', 'show', '@fixtures/agent-echo'], env);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^agent: +@fixtures\/agent-echo$/m);
  assert.match(shown.stdout, /^versions: +\S+/m);
  const input = join(dir, 'input.json');
  writeFileSync(input, JSON.stringify({ message: 'from a file' }));
  const ran = await run(['agents', 'run', '@fixtures/agent-echo', '--input-file', input, '--wait'], env);
  assert.equal(ran.code, 0, ran.stderr + ran.stdout);
  assert.match(ran.stdout, /^status: +success$/m);
  assert.match(ran.stdout, /from a file/);
});

/** A stand-in instance on loopback for the time of `use`, closed however it ends. */
async function withStandIn(handler: RequestListener, use: (base: string) => Promise<void>): Promise<void> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await use(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}
