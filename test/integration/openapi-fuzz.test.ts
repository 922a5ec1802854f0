// Every operation of the instance's own OpenAPI document gets generated bad input (see
// openapi-fuzz-cases.ts), with an API key, a session and no credential: no answer is a 5xx, and
// every 4xx is a problem document with the spec's members and the Request-Id it was sent with.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg, aSession } from '../support/builders.ts';
import { probesFor, seeded, type Operation, type Probe } from './openapi-fuzz-cases.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261125);
const PARALLEL = 4;
// operations that reach the outside world once a request is valid: only probed without a credential
const OUTSIDE = new Set(['GET /api/models/openrouter', 'POST /api/packages/import-github']);

let app: TestApp;
let agent: http.Agent;
let key: string;
let orgId: string;
let spaceId: string;
let ownerId: string;

before(async () => {
  // a closed loopback port: nothing generated here may leave the machine
  app = await startTestApp({ env: { GITHUB_API_URL: 'http://127.0.0.1:9' } });
  const pool = app.deps.database.pool;
  const org = await anOrg(pool);
  ({ orgId, spaceId, ownerId } = org);
  ({ key } = await aKey(pool, { ...org, userId: ownerId }));
  agent = new http.Agent({ keepAlive: true, maxSockets: PARALLEL });
});
after(async () => {
  agent.destroy();
  await app.close();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

function send(p: Probe, cookie: string): Promise<Answer> {
  const url = new URL(app.url);
  const headers: Record<string, string> = {};
  if (p.auth === 'key') headers.authorization = `Bearer ${key}`;
  if (p.auth === 'session') Object.assign(headers, { cookie, 'x-org-id': orgId, 'x-space-id': spaceId });
  Object.assign(headers, p.headers);
  if (p.body !== undefined) headers['content-length'] = String(Buffer.byteLength(p.body));
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method: p.method, path: p.target, headers, agent, timeout: 30_000 }, (res) => {
      // an accepted realtime stream never ends: its status and headers are the answer
      if (res.statusCode === 200 && /^text\/event-stream/.test(String(res.headers['content-type']))) {
        res.destroy();
        resolve({ status: 200, headers: res.headers, text: '' });
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', reject);
    req.end(p.body);
  });
}

/**
 * What the document declares instead of a problem document for this answer's status: an OAuth
 * endpoint's own error body (RFC 6749 / RFC 7591), or an HTML page of the OpenID provider.
 */
function declaredOther(a: Answer, op: any): boolean {
  const content = op.responses?.[String(a.status)]?.content ?? {};
  if (Object.keys(content).join() === 'text/html') return /^text\/html/.test(String(a.headers['content-type']));
  if (content['application/json']?.schema?.$ref !== '#/components/schemas/OAuthError') return false;
  if (!/^application\/json/.test(String(a.headers['content-type']))) return false;
  try {
    const body = JSON.parse(a.text);
    return typeof body.error === 'string' && typeof body.error_description === 'string';
  } catch {
    return false;
  }
}

/** What is wrong with an answer, or null. */
function fault(a: Answer, op: any): string | null {
  if (a.status >= 500) return `answered ${a.status}`;
  if (a.status < 400 || declaredOther(a, op)) return null;
  if (!/^application\/problem\+json/.test(String(a.headers['content-type']))) return `a ${a.status} of type ${a.headers['content-type']}`;
  let body: any;
  try {
    body = JSON.parse(a.text);
  } catch {
    return `a ${a.status} whose body is not JSON`;
  }
  const requestId = a.headers['request-id'];
  if (typeof requestId !== 'string' || !/^req_/.test(requestId)) return `a ${a.status} without a Request-Id`;
  for (const m of ['type', 'title', 'detail', 'instance', 'code']) if (typeof body[m] !== 'string') return `a ${a.status} without ${m}`;
  if (body.status !== a.status) return `a ${a.status} whose status member is ${body.status}`;
  if (body.request_id !== requestId) return `a ${a.status} whose request_id is not the Request-Id`;
  return null;
}

test('generated bad input to every operation answers no 5xx and a problem document on every 4xx', { timeout: 180_000 }, async () => {
  const doc = JSON.parse(await new Promise<string>((resolve, reject) => {
    http.get(`${app.url}/api/openapi.json`, (res) => {
      let s = '';
      res.setEncoding('utf8').on('data', (c) => (s += c)).on('end', () => resolve(s));
    }).on('error', reject);
  }));
  const rand = seeded(SEED);
  const operations: Operation[] = [];
  for (const [path, ops] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) operations.push({ method, path, op });
  }
  assert.ok(operations.length > 50, `the document lists ${operations.length} operations`);

  const failures: string[] = [];
  let sent = 0;
  const started = Date.now();
  for (const operation of operations) {
    const outside = OUTSIDE.has(`${operation.method.toUpperCase()} ${operation.path}`);
    const probes = probesFor(doc, operation, { orgId, spaceId }, rand).map((p) => (outside ? { ...p, auth: 'none' as const } : p));
    // a session of its own per operation: sign-out and password changes end the sessions they touch
    const { cookie } = await aSession(app.deps.database.pool, ownerId);
    for (let i = 0; i < probes.length; i += PARALLEL) {
      await Promise.all(probes.slice(i, i + PARALLEL).map(async (p) => {
        sent++;
        try {
          const problem = fault(await send(p, cookie), operation.op);
          if (problem) failures.push(`${p.label} [${p.auth}]: ${problem}`);
        } catch (err) {
          failures.push(`${p.label} [${p.auth}]: ${(err as Error).message}`);
        }
      }));
    }
  }
  const seconds = (Date.now() - started) / 1000;
  assert.deepEqual(failures.slice(0, 40), [], `${failures.length} of ${sent} probes failed (seed ${SEED}, ${seconds} s)`);
  assert.ok(sent > 2000, `${sent} probes sent`);
});
