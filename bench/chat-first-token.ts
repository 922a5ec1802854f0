// Chat first token: on a real platform process, the time from sending a chat turn (POST
// /api/chat/sessions/{id}/messages) to its first streamed token frame, beside the scripted model's
// own time to first token asked directly (POST /v1/chat/completions, stream: true) in the same run.
// The difference is the platform's overhead: the session, usage, skill and model look-ups, the
// stored user message, the guarded outbound call and the re-framing of the stream.
// Target (issue 18): overhead under 50 ms at p50. ROUNDS (default 200) turns of each.
import http from 'node:http';
import pg from 'pg';
import { aKey, anOrg, aSession } from '../test/support/builders.ts';
import { startFakeModel } from '../test/fixtures/fake-model/server.ts';
import { emit, freshBenchDatabase, loadAverage, note, round, send, spread, startPlatformChild } from './support.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 200);
const TURNS_PER_SESSION = 20;

/** POSTs the body and resolves with the milliseconds until `isFirst` holds for the text received so far; the rest is read to the end. */
function timeToFirst(url: string, headers: Record<string, string>, body: unknown, agent: http.Agent, isFirst: (text: string) => boolean): Promise<number> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let first = NaN;
    let text = '';
    const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
        if (Number.isNaN(first) && isFirst(text)) first = performance.now() - started;
      });
      res.on('end', () => (Number.isNaN(first) ? reject(new Error(`no first token (${res.statusCode}): ${text.slice(0, 300)}`)) : resolve(first)));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const directFirst = (text: string) => /"delta":\{"content":"[^"]+"/.test(text);
const chatFirst = (text: string) => text.includes('event: token\n');

async function main(): Promise<void> {
  const fake = await startFakeModel();
  const db = await freshBenchDatabase();
  const platform = await startPlatformChild({
    env: { DATABASE_URL: db.url, SANDBOX_WARM_POOL: '0', LOG_LEVEL: 'warn', EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host, CHAT_TURN_RATE_PER_MIN: '100000' },
    readyTimeoutMs: 120_000,
  }).catch(async (err) => {
    await db.drop();
    await fake.close();
    throw err;
  });
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    const org = await anOrg(pool);
    const { key } = await aKey(pool, { ...org, userId: org.ownerId });
    const auth = { authorization: `Bearer ${key}` };
    const cred = await send('POST', `${platform.url}/api/model-provider-credentials`, { headers: auth, body: { provider: 'openai-compatible', name: 'fake', base_url: fake.url, api_key: 'sk-bench' } });
    const model = await send('POST', `${platform.url}/api/models`, { headers: auth, body: { credential_id: (cred.body as any).id, model: 'fake-text', name: 'fake-text', is_default: true } });
    if (model.status !== 201) throw new Error(`model: ${model.status} ${JSON.stringify(model.body)}`);
    const session = { cookie: (await aSession(pool, org.ownerId)).cookie, 'x-org-id': org.orgId, 'x-space-id': org.spaceId };
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

    let chatId = '';
    const openChat = async () => {
      const made = await send('POST', `${platform.url}/api/chat/sessions`, { headers: session, body: {} });
      if (made.status !== 201) throw new Error(`session: ${made.status} ${JSON.stringify(made.body)}`);
      chatId = (made.body as any).id;
    };
    const direct: number[] = [];
    const chat: number[] = [];
    const directTurn = () => timeToFirst(`${fake.url}/chat/completions`, { authorization: 'Bearer sk-bench' }, { model: 'fake-text', stream: true, messages: [{ role: 'user', content: 'hello' }] }, agent, directFirst);
    const chatTurn = () => timeToFirst(`${platform.url}/api/chat/sessions/${chatId}/messages`, session, { content: 'hello' }, agent, chatFirst);

    note('warming up');
    await openChat();
    for (let i = 0; i < 10; i++) {
      await directTurn();
      await chatTurn();
    }
    note(`${ROUNDS} turns of each, alternating`);
    for (let i = 0; i < ROUNDS; i++) {
      if (i % TURNS_PER_SESSION === 0) await openChat();
      direct.push(await directTurn());
      chat.push(await chatTurn());
    }
    const d = spread(direct);
    const c = spread(chat);
    emit({
      benchmark: 'chat-first-token',
      rounds: ROUNDS,
      turns_per_session: TURNS_PER_SESSION,
      model_direct_first_token_ms: d,
      chat_first_token_ms: c,
      platform_overhead_ms: { p50: round(c.p50 - d.p50), p99: round(c.p99 - d.p99) },
      target: { overhead_p50_ms: 50 },
      met: c.p50 - d.p50 < 50,
      load_average: loadAverage(),
    });
  } finally {
    await pool.end();
    await platform.dispose();
    await db.drop();
    await fake.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
