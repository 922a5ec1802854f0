// The sidecar's HTTP surface on 127.0.0.1: the model endpoint, the MCP endpoint and the agent
// runtime's end-of-run report. Everything answers 503 until the run assignment arrives, then 401
// to any request without the run's token: whoever else reaches the port gets nothing proxied.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EgressOptions } from '../lib/egress.ts';
import type { McpToolServer } from '../lib/mcp/tool-server.ts';
import type { SidecarAssignment } from './assignment.ts';
import { EventPoster, type EventPosterOptions } from './event-poster.ts';
import { platformCredentialRefresh } from './connection-refresh.ts';
import { firstPartyTools } from './first-party-tools.ts';
import { integrationTools, type IntegrationTools } from './integration-tools.ts';
import { handleMcp, mcpToolServer } from './mcp-endpoint.ts';
import { ModelBudget } from './model-budget.ts';
import { answerModels, proxyChatCompletion } from './model-proxy.ts';
import { runtimeTools } from './runtime-tools.ts';
import type { SidecarTool } from './tool.ts';
import { SidecarTracing } from './tracing.ts';

const MAX_BODY_BYTES = 32 * 1024 * 1024;

interface AssignedRun {
  assignment: SidecarAssignment;
  tokenDigest: Buffer;
  events: EventPoster;
  /** settles once the remote integrations' tools are listed */
  mcp: Promise<McpToolServer>;
  integrations: Promise<IntegrationTools>;
  budget: ModelBudget;
  tracing: SidecarTracing;
}

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BodyTooLarge());
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** POST /runtime/events: the agent runtime's completed or failed report, forwarded as a signed event. */
function acceptRuntimeEvent(res: ServerResponse, raw: Buffer, events: EventPoster): void {
  let body: any;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return sendJson(res, 400, { error: 'body is not JSON' });
  }
  if (events.ended) return sendJson(res, 409, { error: 'the run already reported its end' });
  let sequence: number | undefined;
  if (body?.type === 'completed' && (body.text === undefined || typeof body.text === 'string')) {
    sequence = events.emit('completed', body.text === undefined ? {} : { text: body.text });
  } else if (body?.type === 'failed' && typeof body.code === 'string' && body.code !== '' && typeof body.message === 'string') {
    sequence = events.emit('failed', { code: body.code, message: body.message });
  } else {
    return sendJson(res, 400, { error: 'expected {type:"completed", text?} or {type:"failed", code, message}' });
  }
  sendJson(res, 202, { accepted: sequence !== undefined, sequence: sequence ?? null });
}

const sha256 = (text: string) => createHash('sha256').update(text).digest();

/** Authorization: Bearer <the run's token>, compared in constant time (digests: equal lengths). */
function presentsToken(req: IncomingMessage, tokenDigest: Buffer): boolean {
  const match = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '');
  return match !== null && timingSafeEqual(sha256(match[1]), tokenDigest);
}

export interface SidecarServerOptions {
  /** name resolution of the model provider's host; the system resolver when absent (tests pin answers) */
  resolve?: EgressOptions['resolve'];
}

export class SidecarHttpServer {
  private run: AssignedRun | null = null;
  readonly server: Server;
  private socketServer: Server | null = null;
  private port: number | undefined;

  constructor(private readonly opts: SidecarServerOptions = {}) {
    this.server = createServer(this.handle);
  }

  private readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.route(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { error: 'sidecar error' });
      else res.destroy();
    });
  };

  /** host: 127.0.0.1 unless the sandbox puts the agent elsewhere (the docker backend: its run network) */
  listen(host = '127.0.0.1'): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, host, () => {
        this.port = (this.server.address() as AddressInfo).port;
        resolve(this.port);
      });
    });
  }

  /** Serves the same routes on a unix socket too (for an agent confined to its own network namespace). */
  listenOnSocket(path: string): Promise<void> {
    if (this.socketServer) return Promise.reject(new Error('the sidecar already serves a socket'));
    const server = createServer(this.handle);
    this.socketServer = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => resolve());
    });
  }

  /** Takes the run: builds its tools, emits started and starts the heartbeat. */
  assign(assignment: SidecarAssignment, hooks: Pick<EventPosterOptions, 'onEnd' | 'onEndUndelivered'> = {}): EventPoster {
    if (this.run) throw new Error('the sidecar is already assigned');
    // retried at least once a heartbeat: a platform back from a restart hears the run within one
    const maxBackoffMs = Math.min(5_000, assignment.heartbeatSeconds * 1000);
    const tracing = new SidecarTracing(assignment.trace);
    const events = new EventPoster({
      eventsUrl: assignment.eventsUrl, secret: assignment.eventSecret, maxBackoffMs, ...hooks,
      ...(tracing.recording ? { spans: () => tracing.recorder.take(), traceparent: tracing.recorder.traceparent } : {}),
    });
    const egress = this.egressOptions(assignment);
    const integrations = integrationTools(assignment.integrations, {
      egress,
      proxy: assignment.proxy ?? null,
      refreshCredential: assignment.connectionsUrl ? platformCredentialRefresh(assignment.connectionsUrl, assignment.eventSecret) : undefined,
      note: (message) => events.emit('log', { level: 'info', message }),
      ...(tracing.recording ? { upstreamSpan: (method: string, target: URL) => tracing.upstreamSpan(method, target) } : {}),
    }, assignment.localIntegrations);
    const tools: SidecarTool[] = [
      ...runtimeTools({
        events,
        outputSchema: assignment.outputSchema,
        runtimeTools: assignment.runtimeTools,
        filesDir: assignment.filesDir,
        publishUrl: assignment.publishUrl,
        secret: assignment.eventSecret,
      }),
      ...firstPartyTools({ secret: assignment.eventSecret, historyUrl: assignment.historyUrl, memoryUrl: assignment.memoryUrl }),
    ];
    const mcp = integrations.then((found) => mcpToolServer(tracing.traceTools([...found.tools, ...tools])));
    this.run = { assignment, tokenDigest: sha256(assignment.token), events, mcp, integrations, budget: new ModelBudget(assignment.budget), tracing };
    events.emit('started', {});
    events.startHeartbeat(assignment.heartbeatSeconds);
    return events;
  }

  /** The egress guard's options for this run: the operator's allowlist; never the platform, never this sidecar. */
  private egressOptions(assignment: SidecarAssignment): EgressOptions {
    return {
      allowInternalHosts: assignment.egressAllowInternalHosts,
      platformEndpoints: [...assignment.egressPlatformEndpoints, ...(this.port ? [{ host: '127.0.0.1', port: this.port }] : [])],
      resolve: this.opts.resolve,
    };
  }

  /** Closes the remote integrations' sessions. */
  async close(): Promise<void> {
    await (await this.run?.integrations)?.close();
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const run = this.run;
    if (!run) {
      req.resume();
      return sendJson(res, 503, { error: 'the sidecar has no run yet' });
    }
    if (!presentsToken(req, run.tokenDigest)) {
      req.resume();
      res.setHeader('www-authenticate', 'Bearer');
      return sendJson(res, 401, { error: "the sidecar serves its own run's agent only" });
    }
    const path = (req.url ?? '/').split('?')[0];
    const method = req.method ?? 'GET';
    let body: Buffer = Buffer.alloc(0);
    if (method === 'POST') {
      try {
        body = await readBody(req);
      } catch (err) {
        if (err instanceof BodyTooLarge) return sendJson(res, 413, { error: `bodies are limited to ${MAX_BODY_BYTES} bytes` });
        throw err;
      }
    }

    if (path === '/v1/chat/completions' && method === 'POST') {
      return proxyChatCompletion(res, body, run.assignment.model, run.events, this.egressOptions(run.assignment), run.budget, undefined, run.tracing);
    }
    if (path === '/v1/models' && method === 'GET') return answerModels(res, run.assignment.model);
    if (path === '/mcp') return handleMcp(await run.mcp, req, res, body);
    if (path === '/runtime/events' && method === 'POST') return acceptRuntimeEvent(res, body, run.events);
    sendJson(res, 404, { error: `no route ${method} ${path}` });
  }
}
