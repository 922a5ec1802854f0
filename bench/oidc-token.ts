// OIDC bearer cost benchmark. Prints one JSON object: GET /api/spaces with an OIDC access token
// (ES256 JWT verified locally, then the identity cache as for keys) beside the same route with an
// API key, same run, same platform, 32 connections for about BENCH_SECONDS (10) s each, in the
// order key, token, key (the key's figure is the better of its two passes, so a warming machine
// does not favour the token), and the token/key ratio.
// Target: the token path within 10% of the key path (ratio >= 0.9 in requests/s).
// The token comes from the real flow: openid-client (authorization code + PKCE) against the
// platform child, through its sign-in and consent pages.
//   node --import tsx bench/oidc-token.ts
import os from 'node:os';
import pg from 'pg';
import { aKey, anOrg, aSpace, aUserWithPassword } from '../test/support/builders.ts';
import { aClient, codeFlow, relyingParty } from '../test/integration/oidc-harness.ts';
import { generator, load } from './harness/load.ts';
import { emit, freshBenchDatabase, note, startPlatformChild } from './support.ts';

const ROUTE = '/api/spaces';
const CONNECTIONS = 32;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const TARGET_RATIO = 0.9;

async function main(): Promise<void> {
  const db = await freshBenchDatabase();
  const platform = await startPlatformChild({ env: { DATABASE_URL: db.url, SANDBOX_WARM_POOL: '0' } });
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    const org = await anOrg(pool);
    for (let i = 0; i < 5; i++) await aSpace(pool, org.orgId, { name: `Space ${i}` });
    const person = await aUserWithPassword(pool);
    await pool.query(`INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, 'admin')`, [org.orgId, person.userId]);
    const { key } = await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: person.userId, scopes: ['spaces:read'] });
    await aClient(pool, { id: 'oac_bench', level: 'org', orgId: org.orgId, scopes: ['spaces:read'] });
    const flow = await codeFlow(await relyingParty(platform.url, 'oac_bench'), person, { scope: 'openid spaces:read' });
    if (!flow.tokens) throw new Error(`no token: ${flow.browser.lastPage()?.html ?? 'no page'}`);
    const token = flow.tokens.access_token;

    const measure = (headers: Record<string, string>) => load({ url: platform.url + ROUTE, connections: CONNECTIONS, seconds: SECONDS, headers, expect: 200 });
    const keyAuth = { authorization: `Bearer ${key}`, 'x-org-id': org.orgId };
    const tokenAuth = { authorization: `Bearer ${token}` };
    note('warm-up');
    await load({ url: platform.url + ROUTE, connections: 10, seconds: 2, headers: keyAuth, expect: 200 });
    await load({ url: platform.url + ROUTE, connections: 10, seconds: 2, headers: tokenAuth, expect: 200 });
    note(`API key GET ${ROUTE} (1)`);
    const key1 = await measure(keyAuth);
    note(`OIDC token GET ${ROUTE}`);
    const oidcToken = await measure(tokenAuth);
    note(`API key GET ${ROUTE} (2)`);
    const key2 = await measure(keyAuth);
    const apiKey = key1.requests_per_sec >= key2.requests_per_sec ? key1 : key2;
    const ratio = Number((oidcToken.requests_per_sec / apiKey.requests_per_sec).toFixed(3));
    emit({
      benchmark: 'oidc-token',
      setup: {
        platform: 'node bin/start.mjs platform (child process, NODE_ENV=production, SANDBOX_WARM_POOL=0, DATABASE_URL on a fresh database)',
        token: 'org-level client, authorization code + PKCE through the pages; ES256 JWT, audience <issuer>/api, scope spaces:read',
        generator: generator(), connections: CONNECTIONS, seconds: SECONDS,
        load_average_after: os.loadavg().map((l) => Number(l.toFixed(2))),
      },
      api_key: apiKey,
      api_key_passes: [key1, key2],
      oidc_token: oidcToken,
      ratio_requests_per_sec: ratio,
      p99_ms: { api_key: apiKey.p99_ms, oidc_token: oidcToken.p99_ms },
      target: { ratio_at_least: TARGET_RATIO },
      meets_target: ratio >= TARGET_RATIO,
    });
  } finally {
    await pool.end();
    await platform.dispose();
    await db.drop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
