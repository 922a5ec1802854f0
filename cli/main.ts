// agent-platform: the platform's command-line client. Arguments are parsed with node:util
// parseArgs; every command is a row of COMMANDS (its words, flags and help), which `help` and
// the shell completion (completion.ts) read too. Exit codes: output.ts EXIT, listed by `help`.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { PlatformError } from '../sdk/src/core.ts';
import { instanceOf, readConfig, writeConfig } from './config.ts';
import { completionScript } from './completion.ts';
import { followRun, readLogs, type LogEntry } from './follow.ts';
import { claimsOf, DEFAULT_API_SCOPES, pollDeviceFlow, revoke, startDeviceFlow } from './oauth.ts';
import { clean, EXIT, makeOut, paint, printFields, printJson, printTable, reportError, RUN_EXIT, statusWord, UsageError, type Out } from './output.ts';
import { call, openPasswordSession, openSession, packageParts, resolveUrl, type Globals, type Session } from './session.ts';

export const OPTIONS = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  org: { type: 'string' },
  space: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  input: { type: 'string' },
  'input-file': { type: 'string' },
  wait: { type: 'boolean' },
  follow: { type: 'boolean', short: 'f' },
  status: { type: 'string' },
  limit: { type: 'string' },
  offset: { type: 'string' },
  version: { type: 'string' },
  output: { type: 'string', short: 'o' },
  name: { type: 'string' },
  cron: { type: 'string' },
  timezone: { type: 'string' },
  scopes: { type: 'string' },
  'expires-at': { type: 'string' },
  reason: { type: 'string' },
  email: { type: 'string' },
} as const;

type Values = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };
export const GLOBAL_FLAGS = ['url', 'api-key', 'org', 'space', 'json', 'help'];

interface Ctx {
  args: string[];
  values: Values;
  globals: Globals;
  out: Out;
  session(): Promise<Session>;
}

export interface Command {
  words: string[];
  /** positional arguments, as shown in help */
  params?: string;
  flags: string[];
  summary: string;
  run(ctx: Ctx): Promise<number>;
}

const RUN_STATUSES = ['pending', 'running', 'success', 'failed', 'timeout', 'cancelled'];

function arg(ctx: Ctx, i: number, what: string): string {
  const v = ctx.args[i];
  if (v === undefined || v === '') throw new UsageError(`missing ${what}`);
  return v;
}

function intFlag(v: string | undefined, name: string, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${name} takes a whole number from ${min} to ${max}`);
  return n;
}

function jsonObject(text: string, where: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${where} is not JSON: ${(err as Error).message}`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new UsageError(`${where} must be a JSON object`);
  return v as Record<string, unknown>;
}

function inputOf(values: Values): Record<string, unknown> | undefined {
  if (values.input !== undefined && values['input-file'] !== undefined) throw new UsageError('pass --input or --input-file, not both');
  if (values.input !== undefined) return jsonObject(values.input, '--input');
  if (values['input-file'] !== undefined) {
    let text: string;
    try {
      text = values['input-file'] === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(values['input-file'], 'utf8');
    } catch (err) {
      throw new UsageError(`--input-file: ${(err as Error).message}`);
    }
    return jsonObject(text, '--input-file');
  }
  return undefined;
}

const when = (iso: unknown) => (typeof iso === 'string' ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '');
const seconds = (ms: unknown) => (typeof ms === 'number' ? `${(ms / 1000).toFixed(1)} s` : '');

function printLog(out: Out, e: LogEntry): void {
  if (out.json) {
    out.write(JSON.stringify(e));
    return;
  }
  const colour = e.level === 'error' ? 'red' : e.level === 'warn' ? 'yellow' : 'dim';
  out.write(`${paint(out, 'dim', when(e.createdAt))} ${paint(out, colour, e.level.padEnd(5))} ${clean(e.message)}`);
}

/** A progress line on a terminal's stderr (nothing when stderr is not a terminal or --json). */
function progress(out: Out): { set(text: string): void; done(): void } {
  const on = Boolean(process.stderr.isTTY) && !out.json;
  let shown = false;
  return {
    set(text) {
      if (!on) return;
      process.stderr.write(`\r\u001b[2K${text}`);
      shown = true;
    },
    done() {
      if (on && shown) process.stderr.write('\r\u001b[2K');
    },
  };
}

function printRun(out: Out, run: Record<string, any>): void {
  printFields(out, [
    ['id', run.id], ['agent', `${run.packageId}@${run.agent_version}`], ['status', statusWord(out, String(run.status))],
    ['created', when(run.createdAt)], ['duration', seconds(run.duration_ms)],
    ['triggered by', run.triggered_by?.kind], ...(run.rerun_of ? [['rerun of', run.rerun_of] as [string, unknown]] : []),
    ...(run.resumed_from ? [['resumed from', run.resumed_from] as [string, unknown]] : []),
    ...(run.error ? [['error', `${run.error.code}: ${run.error.message}`] as [string, unknown]] : []),
  ]);
  if (run.result && run.result.output !== undefined) {
    out.write(paint(out, 'dim', 'output:'));
    out.write(clean(JSON.stringify(run.result.output, null, 2)).replace(/\\x0a/g, '\n'));
  }
}

/** After --wait or --follow: the run's ending, printed; its exit code. */
function ended(out: Out, run: Record<string, any>): number {
  if (out.json) printJson(out, run);
  else printRun(out, run);
  return RUN_EXIT[String(run.status)] ?? EXIT.internal;
}

async function waitOrFollow(ctx: Ctx, s: Session, run: Record<string, any>): Promise<number> {
  const { out, values } = ctx;
  if (values.follow) {
    const bar = progress(out);
    const final = await followRun(s, run.id, {
      onEntry: (e) => printLog(out, e),
      onReconnect: (n, why) => out.error(paint(out, 'dim', `stream dropped (${why}); reconnecting (${n})`)),
    });
    bar.done();
    return ended(out, final);
  }
  if (values.wait) {
    const bar = progress(out);
    const started = Date.now();
    const tick = setInterval(() => bar.set(`${run.id}: waiting (${Math.round((Date.now() - started) / 1000)} s)`), 1000);
    try {
      return ended(out, await s.helpers.waitForRun(run.id));
    } finally {
      clearInterval(tick);
      bar.done();
    }
  }
  if (out.json) printJson(out, run);
  else out.write(run.id);
  return EXIT.ok;
}

async function list(s: Session, path: string, query: Record<string, string | number | undefined>, limit: number | undefined): Promise<Record<string, any>[]> {
  const items: Record<string, any>[] = [];
  // --limit: that many items (one page when it fits one); else every page
  for await (const item of s.helpers.paginate(path, { ...query, limit: limit === undefined ? undefined : Math.min(limit, 100) })) {
    items.push(item);
    if (limit !== undefined && items.length >= limit) break;
  }
  return items;
}

const listed = (out: Out, items: unknown[], table: () => void) => {
  if (out.json) printJson(out, { object: 'list', data: items });
  else table();
  return EXIT.ok;
};

/** --scopes a,b: the API scopes asked at login (default: DEFAULT_API_SCOPES). */
function loginScopes(raw: string | undefined): string[] {
  if (raw === undefined) return DEFAULT_API_SCOPES;
  const scopes = [...new Set(raw.split(',').map((x) => x.trim()).filter(Boolean))];
  if (scopes.length === 0) throw new UsageError('--scopes takes a comma-separated list of scopes like runs:read,agents:run');
  const bad = scopes.find((x) => !/^[a-z][a-z-]*:[a-z][a-z-]*$/.test(x));
  if (bad !== undefined) throw new UsageError(`--scopes: ${bad} is not a scope like runs:read`);
  return scopes;
}

async function login(ctx: Ctx): Promise<number> {
  const { out } = ctx;
  const config = readConfig();
  const base = resolveUrl(ctx.globals, config);
  const asked = loginScopes(ctx.values.scopes);
  const { discovery, start } = await startDeviceFlow(base, asked);
  if (out.json) out.write(JSON.stringify({ verification_uri: start.verification_uri, verification_uri_complete: start.verification_uri_complete, user_code: start.user_code, expires_in: start.expires_in }));
  else {
    out.write(`To sign in, open ${clean(start.verification_uri)} and enter the code ${paint(out, 'bold', clean(start.user_code))}`);
    if (start.verification_uri_complete) out.write(`(or open ${clean(start.verification_uri_complete)})`);
  }
  const bar = progress(out);
  const began = Date.now();
  const tokens = await pollDeviceFlow(discovery, start, () => bar.set(`waiting for approval (${Math.round((Date.now() - began) / 1000)} s)`));
  bar.done();
  const fresh = readConfig();
  const instance = instanceOf(fresh, base);
  instance.tokens = tokens;
  fresh.url = base;
  writeConfig(fresh);
  // defaults when there is one obvious choice: the only organization and its default space
  // (the default space only when spaces:read was granted: --scopes may have left it out)
  const granted = new Set((tokens.scope ?? asked.join(' ')).split(' '));
  const s = await openSession({ url: base }, out);
  if (!instance.org) {
    const orgs = await call<{ data: Array<{ id: string }> }>(s, 'GET', '/api/orgs');
    if (orgs.data.length === 1) {
      instance.org = orgs.data[0].id;
      if (granted.has('spaces:read')) {
        const withOrg = await openSession({ url: base, org: instance.org }, out);
        const spaces = await call<{ data: Array<{ id: string; is_default: boolean }> }>(withOrg, 'GET', '/api/spaces');
        instance.space = spaces.data.find((x) => x.is_default)?.id;
      }
      writeConfig(fresh);
    }
  }
  const claims = claimsOf(tokens.id_token);
  if (out.json) printJson(out, { signed_in: true, url: base, user: claims.sub ?? claimsOf(tokens.access_token).sub, org: instance.org ?? null, space: instance.space ?? null, scope: tokens.scope ?? null });
  else {
    out.write(`Signed in to ${base}.`);
    if (instance.org) out.write(`Organization ${instance.org}, space ${instance.space ?? '(none)'} (change with \`agent-platform use --org ID --space ID\`).`);
    else out.write('Choose an organization and space with `agent-platform use --org ID --space ID`.');
  }
  return EXIT.ok;
}

async function logout(ctx: Ctx): Promise<number> {
  const config = readConfig();
  const base = resolveUrl(ctx.globals, config);
  const instance = instanceOf(config, base);
  if (!instance.tokens) {
    if (ctx.out.json) printJson(ctx.out, { signed_out: true, url: base, revoked: false });
    else ctx.out.write(`Not signed in to ${base}.`);
    return EXIT.ok;
  }
  await revoke(base, instance.tokens);
  delete instance.tokens;
  writeConfig(config);
  if (ctx.out.json) printJson(ctx.out, { signed_out: true, url: base, revoked: true });
  else ctx.out.write(`Signed out of ${base}; its tokens are revoked.`);
  return EXIT.ok;
}

/** A password typed on the terminal, not echoed. */
function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(question);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let typed = '';
    const finish = () => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          finish();
          resolve(typed);
          return;
        }
        if (ch === '\u0003') {
          finish();
          reject(new UsageError('no password typed'));
          return;
        }
        typed = ch === '\u007f' || ch === '\b' ? typed.slice(0, -1) : typed + ch;
      }
    };
    stdin.on('data', onData);
  });
}

/**
 * keys: API keys are managed by a signed-in person, never by a token or a key (the API refuses
 * both), so these commands sign in with email and password for the command and sign out after it.
 */
async function withPasswordSession(ctx: Ctx, fn: (s: Session) => Promise<number>): Promise<number> {
  const email = ctx.values.email ?? process.env.AGENT_PLATFORM_EMAIL;
  let password = process.env.AGENT_PLATFORM_PASSWORD;
  const why = `keys needs a signed-in session: API keys are managed by a signed-in person, never by a token or a key`;
  if (!email) throw new UsageError(`${why}. Pass --email (or set AGENT_PLATFORM_EMAIL) and set AGENT_PLATFORM_PASSWORD (or type the password when asked on a terminal)`);
  if (!password) {
    if (!process.stdin.isTTY) throw new UsageError(`${why}. Set AGENT_PLATFORM_PASSWORD (stdin is not a terminal, so the password cannot be asked)`);
    password = await promptHidden(`Password for ${email}: `);
    if (!password) throw new UsageError('no password typed');
  }
  const s = await openPasswordSession(ctx.globals, { email, password }, ctx.out);
  try {
    return await fn(s);
  } finally {
    await s.end();
  }
}

export const COMMANDS: Command[] = [
  {
    words: ['login'], flags: ['scopes'], run: login,
    summary: 'sign in with the device flow (opens nothing: prints the URL and code); asks the scopes of every command but keys, or --scopes a,b',
  },
  { words: ['logout'], flags: [], summary: 'revoke the stored tokens and forget them', run: logout },
  {
    words: ['use'], params: '--org ID --space ID', flags: [], summary: 'save the default organization and space (--org, --space) for the instance',
    async run(ctx) {
      const config = readConfig();
      const base = resolveUrl(ctx.globals, config);
      const instance = instanceOf(config, base);
      const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
      if (ctx.globals.org !== undefined && !uuid.test(ctx.globals.org)) throw new UsageError('--org takes an organization id (a UUID)');
      if (ctx.globals.space !== undefined && !/^[A-Za-z0-9_-]{1,100}$/.test(ctx.globals.space)) throw new UsageError('--space takes a space id');
      if (ctx.globals.org !== undefined) {
        if (ctx.globals.org !== instance.org) delete instance.space;
        instance.org = ctx.globals.org;
      }
      if (ctx.globals.space !== undefined) instance.space = ctx.globals.space;
      config.url = base;
      writeConfig(config);
      if (ctx.out.json) printJson(ctx.out, { url: base, org: instance.org ?? null, space: instance.space ?? null });
      else printFields(ctx.out, [['instance', base], ['organization', instance.org ?? '(none)'], ['space', instance.space ?? '(none)']]);
      return EXIT.ok;
    },
  },
  {
    words: ['whoami'], flags: [], summary: 'the instance, credential, organization and space in use',
    async run(ctx) {
      const s = await ctx.session();
      const info: Record<string, unknown> = { url: s.base, auth: s.auth };
      if (s.auth === 'oauth') {
        const claims = { ...claimsOf(s.instance.tokens?.access_token), ...claimsOf(s.instance.tokens?.id_token) };
        info.user = { id: claims.sub ?? null, email: claims.email ?? null, name: claims.name ?? null };
        info.org = s.org ?? null;
        info.space = s.space ?? null;
        info.orgs = (await call<{ data: unknown[] }>(s, 'GET', '/api/orgs')).data;
      } else {
        info.key_prefix = `${String(ctx.globals.apiKey ?? process.env.AGENT_PLATFORM_API_KEY).slice(0, 12)}…`;
        info.spaces = (await call<{ data: unknown[] }>(s, 'GET', '/api/spaces')).data;
      }
      if (ctx.out.json) printJson(ctx.out, info);
      else {
        const user = info.user as Record<string, unknown> | undefined;
        printFields(ctx.out, [
          ['instance', s.base],
          ['signed in as', user ? `${user.email ?? user.id} (device sign-in)` : `API key ${info.key_prefix}`],
          ...(s.auth === 'oauth' ? [['organization', s.org ?? '(none)'], ['space', s.space ?? '(none)']] as Array<[string, unknown]> : []),
        ]);
      }
      return EXIT.ok;
    },
  },
  {
    words: ['agents', 'list'], flags: ['limit'], summary: 'agents of the space',
    async run(ctx) {
      const s = await ctx.session();
      const items = await list(s, '/api/packages', { type: 'agent' }, intFlag(ctx.values.limit, 'limit', 1, 10_000));
      return listed(ctx.out, items, () => printTable(ctx.out, ['AGENT', 'LATEST', 'PLACEMENT', 'DESCRIPTION'], items.map((p) => [p.packageId, p.latest_version ?? '-', p.placement, p.description ?? ''])));
    },
  },
  {
    words: ['agents', 'show'], params: '@scope/name', flags: [], summary: 'one agent: versions, dist-tags, placements',
    async run(ctx) {
      const [scope, name] = packageParts(arg(ctx, 0, 'the agent (@scope/name)'));
      const s = await ctx.session();
      const p = await call(s, 'GET', `/api/packages/${scope}/${name}`);
      if (ctx.out.json) printJson(ctx.out, p);
      else {
        printFields(ctx.out, [['agent', p.packageId], ['type', p.type], ['name', p.display_name ?? ''], ['description', p.description ?? ''],
          ['latest', p.latest_version ?? '-'], ['dist-tags', Object.entries(p.dist_tags ?? {}).map(([k, v]) => `${k}=${v}`).join(' ')],
          ['versions', (p.versions ?? []).map((v: { version: string }) => v.version).join(' ')], ['home space', p.home_space_id]]);
      }
      return EXIT.ok;
    },
  },
  {
    words: ['agents', 'run'], params: '@scope/name', flags: ['input', 'input-file', 'wait', 'follow', 'version'],
    summary: 'launch a run; prints its id (--wait: its ending and output; --follow: its log too)',
    async run(ctx) {
      const [scope, name] = packageParts(arg(ctx, 0, 'the agent (@scope/name)'));
      const input = inputOf(ctx.values);
      const s = await ctx.session();
      const run = await call(s, 'POST', `/api/agents/${scope}/${name}/run`, {
        body: { ...(input ? { input } : {}), ...(ctx.values.version ? { version: ctx.values.version } : {}) },
        headers: { 'idempotency-key': crypto.randomUUID() },
      });
      if ((ctx.values.wait || ctx.values.follow) && !ctx.out.json) ctx.out.error(paint(ctx.out, 'dim', `launched ${run.id}`));
      return waitOrFollow(ctx, s, run);
    },
  },
  {
    words: ['runs', 'list'], flags: ['status', 'limit', 'offset'], summary: 'runs of the space, newest first',
    async run(ctx) {
      const status = ctx.values.status;
      if (status !== undefined && !RUN_STATUSES.includes(status)) throw new UsageError(`--status is one of ${RUN_STATUSES.join(', ')}`);
      const s = await ctx.session();
      const limit = intFlag(ctx.values.limit, 'limit', 1, 10_000) ?? 20;
      const items = await list(s, '/api/runs', { status, offset: intFlag(ctx.values.offset, 'offset', 0, 1_000_000) }, limit);
      return listed(ctx.out, items, () => printTable(ctx.out, ['RUN', 'AGENT', 'STATUS', 'CREATED', 'DURATION'],
        items.map((r) => [r.id, r.packageId, statusWord(ctx.out, String(r.status)), when(r.createdAt), seconds(r.duration_ms)])));
    },
  },
  {
    words: ['runs', 'show'], params: 'RUN_ID', flags: ['wait'], summary: 'one run (--wait: once it has ended)',
    async run(ctx) {
      const id = arg(ctx, 0, 'the run id');
      const s = await ctx.session();
      const run = ctx.values.wait ? await s.helpers.waitForRun(id) : await call(s, 'GET', `/api/runs/${encodeURIComponent(id)}`);
      if (ctx.out.json) printJson(ctx.out, run);
      else printRun(ctx.out, run);
      return ctx.values.wait ? RUN_EXIT[String(run.status)] ?? EXIT.internal : EXIT.ok;
    },
  },
  {
    words: ['runs', 'logs'], params: 'RUN_ID', flags: ['follow'], summary: "a run's log (--follow: live until the run ends)",
    async run(ctx) {
      const id = arg(ctx, 0, 'the run id');
      const s = await ctx.session();
      if (ctx.values.follow) {
        const run = await followRun(s, id, {
          onEntry: (e) => printLog(ctx.out, e),
          onReconnect: (n, why) => ctx.out.error(paint(ctx.out, 'dim', `stream dropped (${why}); reconnecting (${n})`)),
        });
        if (!ctx.out.json) ctx.out.error(`${id} ${statusWord(ctx.out, String(run.status))}`);
        return RUN_EXIT[String(run.status)] ?? EXIT.internal;
      }
      await readLogs(s, id, 0, (e) => printLog(ctx.out, e));
      return EXIT.ok;
    },
  },
  {
    words: ['runs', 'cancel'], params: 'RUN_ID', flags: ['reason'], summary: 'cancel a pending or running run',
    async run(ctx) {
      const id = arg(ctx, 0, 'the run id');
      const s = await ctx.session();
      const run = await call(s, 'POST', `/api/runs/${encodeURIComponent(id)}/cancel`, { body: ctx.values.reason ? { reason: ctx.values.reason } : {} });
      if (ctx.out.json) printJson(ctx.out, run);
      else ctx.out.write(`${run.id} ${statusWord(ctx.out, String(run.status))}`);
      return EXIT.ok;
    },
  },
  {
    words: ['runs', 'rerun'], params: 'RUN_ID', flags: ['input', 'input-file', 'wait', 'follow'],
    summary: 'run the same agent again with the run\'s input and model (--input replaces the input)',
    async run(ctx) {
      const id = arg(ctx, 0, 'the run id');
      const input = inputOf(ctx.values);
      const s = await ctx.session();
      const previous = await call(s, 'GET', `/api/runs/${encodeURIComponent(id)}`);
      if (previous.kind !== 'agent') throw new UsageError(`${id} is an ${previous.kind} run; only agent runs are rerun here`);
      const [scope, name] = packageParts(previous.packageId);
      const run = await call(s, 'POST', `/api/agents/${scope}/${name}/run`, {
        body: { rerun_from: id, ...(input ? { input } : {}) }, headers: { 'idempotency-key': crypto.randomUUID() },
      });
      if ((ctx.values.wait || ctx.values.follow) && !ctx.out.json) ctx.out.error(paint(ctx.out, 'dim', `launched ${run.id}`));
      return waitOrFollow(ctx, s, run);
    },
  },
  {
    words: ['runs', 'resume'], params: 'RUN_ID', flags: ['wait', 'follow'],
    summary: 'start a new run from the last checkpoint of a failed or timed-out run (its completed steps are not made again)',
    async run(ctx) {
      const id = arg(ctx, 0, 'the run id');
      const s = await ctx.session();
      const run = await call(s, 'POST', `/api/runs/${encodeURIComponent(id)}/resume`, { body: {}, headers: { 'idempotency-key': crypto.randomUUID() } });
      if ((ctx.values.wait || ctx.values.follow) && !ctx.out.json) ctx.out.error(paint(ctx.out, 'dim', `resumed as ${run.id}`));
      return waitOrFollow(ctx, s, run);
    },
  },
  {
    words: ['runs', 'approvals'], params: 'RUN_ID', flags: [], summary: "a run's approval requests, oldest first: the tool call each asks, its arguments and its decision",
    async run(ctx) {
      const id = arg(ctx, 0, 'the run id');
      const s = await ctx.session();
      const answer = await call(s, 'GET', `/api/runs/${encodeURIComponent(id)}/approvals`);
      const items = answer.data as Record<string, any>[];
      return listed(ctx.out, items, () => printTable(ctx.out, ['APPROVAL', 'TOOL', 'STATUS', 'REQUESTED', 'ARGUMENTS', 'REASON'],
        items.map((a) => [a.id, a.tool, statusWord(ctx.out, String(a.status)), when(a.requested_at), JSON.stringify(a.arguments ?? null), a.reason ?? ''])));
    },
  },
  ...(['approve', 'reject'] as const).map((decision): Command => ({
    words: ['runs', decision], params: 'RUN_ID APPROVAL_ID', flags: ['reason'],
    summary: decision === 'approve' ? 'let a running run make the tool call it waits on (--reason kept on the request)' : 'refuse a running run the tool call it waits on; the agent is told, with --reason',
    async run(ctx) {
      const id = arg(ctx, 0, 'the run id');
      const approvalId = arg(ctx, 1, 'the approval id (see `runs approvals RUN_ID`)');
      const s = await ctx.session();
      const decided = await call(s, 'POST', `/api/runs/${encodeURIComponent(id)}/approvals/${encodeURIComponent(approvalId)}`, {
        body: { decision, ...(ctx.values.reason ? { reason: ctx.values.reason } : {}) },
        headers: { 'idempotency-key': crypto.randomUUID() },
      });
      if (ctx.out.json) printJson(ctx.out, decided);
      else ctx.out.write(`${clean(decided.id)} ${statusWord(ctx.out, String(decided.status))} (${clean(decided.tool)})`);
      return EXIT.ok;
    },
  })),
  {
    words: ['packages', 'import'], params: 'FILE', flags: [], summary: 'import a package archive (.afps or .zip)',
    async run(ctx) {
      const file = arg(ctx, 0, 'the archive file');
      let bytes: Buffer;
      try {
        bytes = fs.readFileSync(file);
      } catch (err) {
        throw new UsageError(`${file}: ${(err as Error).message}`);
      }
      const s = await ctx.session();
      const form = new FormData();
      form.append('file', new Blob([bytes]), path.basename(file));
      const r = await call(s, 'POST', '/api/packages/import', { body: form });
      if (ctx.out.json) printJson(ctx.out, r);
      else ctx.out.write(`imported ${r.packageId}@${r.version} (${r.type})`);
      return EXIT.ok;
    },
  },
  {
    words: ['packages', 'download'], params: '@scope/name', flags: ['version', 'output'], summary: 'download a version\'s archive (default: the latest) to --output or ./<name>-<version>.afps',
    async run(ctx) {
      const [scope, name] = packageParts(arg(ctx, 0, 'the package (@scope/name)'));
      const s = await ctx.session();
      const version = ctx.values.version ?? (await call(s, 'GET', `/api/packages/${scope}/${name}`)).latest_version;
      if (!version) throw new PlatformError(404, { code: 'no_version', detail: `${scope}/${name} has no published version.` });
      const res = await s.fetch(`${s.base}/api/packages/${scope}/${name}/${encodeURIComponent(version)}/download`);
      const bytes = Buffer.from(await res.arrayBuffer());
      const target = ctx.values.output ?? `${name}-${version}.afps`;
      if (target === '-') process.stdout.write(bytes);
      else fs.writeFileSync(target, bytes);
      if (target !== '-') {
        if (ctx.out.json) printJson(ctx.out, { packageId: `${scope}/${name}`, version, file: target, bytes: bytes.length });
        else ctx.out.write(`wrote ${target} (${bytes.length} bytes)`);
      }
      return EXIT.ok;
    },
  },
  {
    words: ['schedules', 'list'], flags: ['limit'], summary: 'schedules of the space',
    async run(ctx) {
      const s = await ctx.session();
      const items = await list(s, '/api/schedules', {}, intFlag(ctx.values.limit, 'limit', 1, 10_000));
      return listed(ctx.out, items, () => printTable(ctx.out, ['SCHEDULE', 'NAME', 'AGENT', 'CRON', 'TIMEZONE', 'ENABLED', 'NEXT RUN'],
        items.map((x) => [x.id, x.name, x.packageId ?? x.agent ?? '', x.cron_expression, x.timezone, x.enabled ? 'yes' : 'no', when(x.next_run_at)])));
    },
  },
  {
    words: ['schedules', 'create'], params: '@scope/name', flags: ['name', 'cron', 'timezone', 'input', 'input-file'],
    summary: 'schedule an agent: --name, --cron "5-field cron", --timezone (default UTC), --input',
    async run(ctx) {
      const [scope, name] = packageParts(arg(ctx, 0, 'the agent (@scope/name)'));
      if (!ctx.values.name) throw new UsageError('--name is required');
      if (!ctx.values.cron) throw new UsageError('--cron is required');
      const input = inputOf(ctx.values);
      const s = await ctx.session();
      const x = await call(s, 'POST', `/api/agents/${scope}/${name}/schedules`, {
        body: { name: ctx.values.name, cron_expression: ctx.values.cron, timezone: ctx.values.timezone ?? 'UTC', ...(input ? { input } : {}) },
      });
      if (ctx.out.json) printJson(ctx.out, x);
      else ctx.out.write(`${x.id} next run ${when(x.next_run_at)}`);
      return EXIT.ok;
    },
  },
  {
    words: ['schedules', 'disable'], params: 'SCHEDULE_ID', flags: [], summary: 'stop a schedule from launching runs',
    async run(ctx) {
      const id = arg(ctx, 0, 'the schedule id');
      const s = await ctx.session();
      const x = await call(s, 'POST', `/api/schedules/${encodeURIComponent(id)}/disable`, { body: {} });
      if (ctx.out.json) printJson(ctx.out, x);
      else ctx.out.write(`${id} disabled`);
      return EXIT.ok;
    },
  },
  {
    words: ['keys', 'create'], flags: ['name', 'scopes', 'expires-at', 'email'],
    summary: 'create an API key in the space; prints the key once (signs in with --email and AGENT_PLATFORM_PASSWORD or a prompt)',
    async run(ctx) {
      if (!ctx.values.name) throw new UsageError('--name is required');
      const scopes = ctx.values.scopes?.split(',').map((x) => x.trim()).filter(Boolean);
      return withPasswordSession(ctx, async (s) => {
        const k = await call(s, 'POST', '/api/api-keys', {
          body: { name: ctx.values.name, ...(scopes ? { scopes } : {}), ...(ctx.values['expires-at'] ? { expiresAt: ctx.values['expires-at'] } : {}) },
        });
        if (ctx.out.json) printJson(ctx.out, k);
        else {
          ctx.out.write(k.key);
          ctx.out.error(paint(ctx.out, 'dim', `${k.id} (${(k.scopes ?? []).length} scopes): the key is shown this once`));
        }
        return EXIT.ok;
      });
    },
  },
  {
    words: ['keys', 'list'], flags: ['email'], summary: 'API keys of the space, never their secrets (signs in like keys create)',
    async run(ctx) {
      return withPasswordSession(ctx, async (s) => {
        const body = await call<{ data: Record<string, any>[] }>(s, 'GET', '/api/api-keys');
        return listed(ctx.out, body.data, () => printTable(ctx.out, ['KEY', 'NAME', 'PREFIX', 'EXPIRES', 'SCOPES'],
          body.data.map((k) => [k.id, k.name, k.keyPrefix, when(k.expiresAt) || 'never', (k.scopes ?? []).join(',')])));
      });
    },
  },
  {
    words: ['keys', 'revoke'], params: 'KEY_ID', flags: ['email'], summary: 'revoke an API key at once (signs in like keys create)',
    async run(ctx) {
      const id = arg(ctx, 0, 'the key id');
      return withPasswordSession(ctx, async (s) => {
        await call(s, 'DELETE', `/api/api-keys/${encodeURIComponent(id)}`);
        if (ctx.out.json) printJson(ctx.out, { id, revoked: true });
        else ctx.out.write(`${id} revoked`);
        return EXIT.ok;
      });
    },
  },
  {
    words: ['completion'], params: 'bash|zsh', flags: [], summary: 'print a shell completion script (eval "$(agent-platform completion bash)")',
    async run(ctx) {
      const shell = arg(ctx, 0, 'the shell (bash or zsh)');
      if (shell !== 'bash' && shell !== 'zsh') throw new UsageError('completion takes bash or zsh');
      process.stdout.write(completionScript(shell, COMMANDS, GLOBAL_FLAGS));
      return EXIT.ok;
    },
  },
];

export function helpText(): string {
  const rows = COMMANDS.map((c) => {
    const flags = c.flags.map((f) => `[--${f}]`).join(' ');
    return [`  ${[...c.words, c.params ?? ''].filter(Boolean).join(' ')} ${flags}`.trimEnd(), c.summary];
  });
  return [
    'agent-platform: the Agent Platform from a terminal',
    '',
    'usage: agent-platform <command> [arguments] [--url URL] [--api-key KEY] [--org ID] [--space ID] [--json]',
    '',
    ...rows.map(([a, b]) => `${a}\n      ${b}`),
    '',
    'Instance: --url, else AGENT_PLATFORM_URL, else the one saved by login/use.',
    'Credential: --api-key, else AGENT_PLATFORM_API_KEY, else the tokens of `login`.',
    'Organization and space (signed-in people): --org/--space, else AGENT_PLATFORM_ORG/AGENT_PLATFORM_SPACE, else `use`.',
    'keys: API keys are managed by a signed-in person, never by a token or a key: keys signs in for the command with',
    '  --email (else AGENT_PLATFORM_EMAIL) and AGENT_PLATFORM_PASSWORD (else a prompt on a terminal), then signs out.',
    `Configuration: $XDG_CONFIG_HOME/agent-platform/config.json (else ~/.config/agent-platform), mode 0600.`,
    '--json prints what the API answers (lists as {"object":"list","data":[...]}); errors as the problem document.',
    '',
    'Exit codes: 0 success; 1 unexpected failure; 2 usage error; 3 not signed in or not allowed (401, 403);',
    '  4 other refusal (4xx); 5 server error (5xx); 6 instance unreachable;',
    '  a run awaited with --wait or --follow: 10 failed, 11 timeout, 12 cancelled.',
    '',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  let out = makeOut(argv.includes('--json'));
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const values = parsed.values as Values;
    out = makeOut(Boolean(values.json));
    const positionals = parsed.positionals;
    if (positionals.length === 0 || positionals[0] === 'help' || (values.help && positionals.length === 0)) {
      process.stdout.write(helpText());
      return positionals.length === 0 && !values.help ? EXIT.usage : EXIT.ok;
    }
    const command = COMMANDS.filter((c) => c.words.every((w, i) => positionals[i] === w)).sort((a, b) => b.words.length - a.words.length)[0];
    if (!command) {
      const group = COMMANDS.filter((c) => c.words[0] === positionals[0]).map((c) => c.words.join(' '));
      throw new UsageError(group.length ? `${positionals.join(' ')}: one of ${group.join(', ')}` : `unknown command ${positionals[0]}`);
    }
    if (values.help) {
      const flags = [...command.flags, ...GLOBAL_FLAGS].map((f) => `[--${f}]`).join(' ');
      process.stdout.write(`agent-platform ${[...command.words, command.params ?? ''].filter(Boolean).join(' ')} ${flags}\n  ${command.summary}\n`);
      return EXIT.ok;
    }
    for (const name of Object.keys(values)) {
      if (!GLOBAL_FLAGS.includes(name) && !command.flags.includes(name)) throw new UsageError(`${command.words.join(' ')} takes no --${name}`);
    }
    if (command.words[0] === 'use' && values.org === undefined && values.space === undefined) throw new UsageError('use takes --org ID and/or --space ID');
    const globals: Globals = { url: values.url, apiKey: values['api-key'], org: values.org, space: values.space };
    let session: Promise<Session> | undefined;
    const ctx: Ctx = { args: positionals.slice(command.words.length), values, globals, out, session: () => (session ??= openSession(globals, out)) };
    return await command.run(ctx);
  } catch (err) {
    return reportError(out, err);
  }
}

// Exit as soon as the command is done: fetch's idle keep-alive connections would otherwise hold
// the process open for seconds (writes to pipes and files are synchronous on Linux and macOS).
process.exit(await main(process.argv.slice(2)));
