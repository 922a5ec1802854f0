// `npm run demo`: the README's first run, made against a started platform, printing each call as it
// makes it and each answer, carrying the ids from one answer into the next calls. It starts the
// scripted model server itself (the stand-in for a model provider), so it needs no account anywhere.
//   npm run demo -- [--url http://127.0.0.1:3000] [--token bst_...] [--data-dir .data] [--model-port 11435] [--password ...]
// The platform must have been started with EGRESS_ALLOW_INTERNAL_HOSTS=127.0.0.1:<model port>.
// The owner it creates (demo@example.com) gets the password given, else a made-up one; either is
// printed once the instance is claimed, so the demo organization can be signed into.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { buildFixtureArchive, FIXTURE_BUILD_DIR } from '../test/fixtures/build-packages.ts';
import { startFakeModel, type FakeModel } from '../test/fixtures/fake-model/server.ts';

const AGENT = 'agent-echo';
const OWNER = 'demo@example.com';
const ENDED = new Set(['success', 'failed', 'timeout', 'cancelled']);
// Shown as sent: the answers are the platform's; the passphrase is printed apart, with how to sign in.
const HIDDEN = new Set(['password']);

class DemoFailed extends Error {}

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    token: { type: 'string' },
    'data-dir': { type: 'string' },
    'model-port': { type: 'string' },
    password: { type: 'string' },
  },
});
const base = (args.url ?? process.env.PLATFORM_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
const dataDir = path.resolve(args['data-dir'] ?? process.env.DATA_DIR ?? '.data');
// Not PORT: that is the platform's own setting, often exported in the same shell.
const modelPort = Number(args['model-port'] ?? process.env.FAKE_MODEL_PORT ?? 11435);

function shown(body: unknown): string {
  return JSON.stringify(body, (k, v) => (HIDDEN.has(k) ? '…' : v));
}

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function send(method: string, route: string, opts: { headers?: Record<string, string>; json?: unknown; form?: FormData; note?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | FormData | undefined;
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
    headers['content-type'] = 'application/json';
  } else if (opts.form) body = opts.form;
  const named = Object.keys(headers).filter((h) => h !== 'content-type');
  process.stdout.write(`\n→ ${method} ${route}${named.length ? `  (${named.join(', ')})` : ''}\n`);
  if (opts.json !== undefined) process.stdout.write(`  ${shown(opts.json)}\n`);
  if (opts.note) process.stdout.write(`  ${opts.note}\n`);
  let res: Response;
  try {
    res = await fetch(base + route, { method, headers, body });
  } catch (err) {
    throw new DemoFailed(`No answer from ${base} (${(err as Error).cause ?? (err as Error).message}). Start the platform first: EGRESS_ALLOW_INTERNAL_HOSTS=127.0.0.1:${modelPort} npm start`);
  }
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: shown as text
  }
  process.stdout.write(`← ${res.status} ${typeof parsed === 'string' ? parsed : shown(parsed)}\n`);
  return { status: res.status, headers: res.headers, body: parsed };
}

function expect(answer: Answer, statuses: number[], what: string): void {
  if (statuses.includes(answer.status)) return;
  const reason = typeof answer.body === 'object' && answer.body ? `${answer.body.code}: ${answer.body.detail}` : String(answer.body);
  throw new DemoFailed(`${what} failed (${answer.status} ${reason})`);
}

function bootstrapToken(): string {
  const given = args.token ?? process.env.BOOTSTRAP_TOKEN;
  if (given) return given;
  const file = path.join(dataDir, 'bootstrap-token');
  if (!fs.existsSync(file)) throw new DemoFailed(`No bootstrap token: ${file} does not exist. Pass --token (the one the platform printed) or --data-dir.`);
  return fs.readFileSync(file, 'utf8').trim();
}

function agentArchive(): Buffer {
  const file = path.join(FIXTURE_BUILD_DIR, `${AGENT}.afps`);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(FIXTURE_BUILD_DIR, { recursive: true });
    fs.writeFileSync(file, buildFixtureArchive(AGENT));
    process.stdout.write(`built ${path.relative(process.cwd(), file)}\n`);
  }
  return fs.readFileSync(file);
}

async function demo(model: FakeModel): Promise<void> {
  const ready = await send('GET', '/health/ready');
  expect(ready, [200], 'The readiness check');

  const password = args.password ?? randomBytes(12).toString('base64url');
  const redeemed = await send('POST', '/api/auth/bootstrap/redeem', {
    json: { token: bootstrapToken(), email: OWNER, password, name: 'Demo' },
  });
  if (redeemed.status === 410) {
    throw new DemoFailed(
      `This instance was already claimed: the demo needs one whose bootstrap was not redeemed. Start another on a fresh data directory (DATA_DIR=.data-2 PORT=3001 EGRESS_ALLOW_INTERNAL_HOSTS=127.0.0.1:${modelPort} npm start), then npm run demo -- --url http://127.0.0.1:3001 --data-dir .data-2`,
    );
  }
  expect(redeemed, [201], 'Claiming the instance');
  process.stdout.write(`  The owner signs in (POST /api/auth/sign-in/email) as ${OWNER} with the password: ${password}\n`);
  const cookie = redeemed.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const session = { cookie, 'x-org-id': redeemed.body.org_id as string, 'x-space-id': redeemed.body.space_id as string };

  const created = await send('POST', '/api/api-keys', { headers: session, json: { name: 'demo' } });
  expect(created, [201], 'Creating an API key');
  const auth = { authorization: `Bearer ${created.body.key as string}` };

  const credential = await send('POST', '/api/model-provider-credentials', {
    headers: auth,
    json: { provider: 'openai-compatible', name: 'scripted model', base_url: model.url, api_key: 'demo-provider-key' },
  });
  expect(credential, [201], 'Adding the model provider');
  const added = await send('POST', '/api/models', { headers: auth, json: { credential_id: credential.body.id, model: 'fake', name: 'fake', is_default: true } });
  expect(added, [201], 'Adding the model');

  const form = new FormData();
  form.append('file', new Blob([agentArchive()]), `${AGENT}.afps`);
  const imported = await send('POST', '/api/packages/import', { headers: auth, form, note: `multipart: file=@test/fixtures/build/${AGENT}.afps` });
  expect(imported, [200, 201], 'Importing the agent');

  const launched = await send('POST', `/api/agents/@fixtures/${AGENT}/run`, { headers: auth, json: { input: { message: 'hello' } } });
  expect(launched, [201], 'Launching the run');
  let run = launched.body as { id: string; status: string; result?: unknown; error?: unknown };
  const deadline = Date.now() + 180_000;
  while (!ENDED.has(run.status)) {
    if (Date.now() > deadline) throw new DemoFailed(`The run ${run.id} did not end within 3 minutes (status ${run.status}).`);
    const polled = await send('GET', `/api/runs/${run.id}?wait=30`, { headers: auth });
    expect(polled, [200], 'Reading the run');
    run = polled.body;
  }
  if (run.status !== 'success') throw new DemoFailed(`The run ended ${run.status}: ${JSON.stringify(run.error)}`);
  process.stdout.write(`\nThe run ${run.id} succeeded. Its result: ${JSON.stringify(run.result)}\n`);
  process.stdout.write(`Sign in to the demo organization as ${OWNER} with the password: ${password}\n`);
}

async function main(): Promise<void> {
  let model: FakeModel;
  try {
    model = await startFakeModel({ port: modelPort });
  } catch (err) {
    throw new DemoFailed(`The scripted model cannot listen on 127.0.0.1:${modelPort} (${(err as NodeJS.ErrnoException).code}); choose another with --model-port and start the platform with EGRESS_ALLOW_INTERNAL_HOSTS=127.0.0.1:<that port>.`);
  }
  process.stdout.write(`Scripted model server: ${model.url}\nPlatform: ${base}\n`);
  try {
    await demo(model);
  } finally {
    await model.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`\n${err instanceof DemoFailed ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
