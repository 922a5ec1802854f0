// The sidecar's HTTP surface on 127.0.0.1: the model endpoint, the MCP endpoint, the agent
// runtime's checkpoints and its end-of-run report. Everything answers 503 until the run
// assignment arrives, then 401 to any request without the run's token: whoever else reaches the
// port gets nothing proxied.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EgressOptions } from '../lib/egress.ts';
import type { McpToolServer } from '../lib/mcp/tool-server.ts';
import { LOCAL_EGRESS_PROXY_PORT } from '../lib/afps/integration-assignment.ts';
import type { SidecarAssignment } from './assignment.ts';
import { localEgressProxy, type LocalEgressProxy } from './local-egress-proxy.ts';
import { EventPoster, type EventPosterOptions } from './event-poster.ts';
import { CheckpointForwarder, fetchResumeCheckpoint, relayCheckpoint } from './checkpoint-relay.ts';
import { platformCredentialRefresh } from './connection-refresh.ts';
import { gatedTools } from './approval-gate.ts';
import { ParkHandover } from './park-handover.ts';
import { firstPartyTools } from './first-party-tools.ts';
import { deliveredCredential, integrationTools, type DeliveredCredential, type IntegrationTools, type IntegrationToolsContext } from './integration-tools.ts';
import { createRunCa, type RunCertificateAuthority } from './run-ca.ts';
import { handleMcp, mcpToolServer } from './mcp-endpoint.ts';
import { ModelBudget } from './model-budget.ts';
import { answerModels, proxyModelCall, type ModelEndpointPath } from './model-proxy.ts';
import { runtimeTools } from './runtime-tools.ts';
import type { SidecarTool } from './tool.ts';
import { SidecarTracing } from './tracing.ts';

/** The OpenAI endpoints the agent's model endpoint serves (beside GET /v1/models). */
const MODEL_PATHS = new Map<string, ModelEndpointPath>([
  ['/v1/chat/completions', 'chat/completions'],
  ['/v1/responses', 'responses'],
  ['/v1/embeddings', 'embeddings'],
]);

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
  /** the run's checkpoints on their way to the platform (null: the run records none) */
  checkpoints: CheckpointForwarder | null;
  /** the runtime's pending state, posted as the run's checkpoint when the platform parks the run */
  park: ParkHandover;
  /** aborted when the session shuts down: waits on the platform's answers end */
  ending: AbortController;
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

/**
 * The credentials the local servers' egress proxy puts on their requests, by package: a local
 * integration whose auth declares delivery.http comes with an entry in `integrations` (source
 * local) holding its credential; one the runner gave no way out has nothing to inject into.
 */
function injectedCredentials(assignment: SidecarAssignment, ctx: Pick<IntegrationToolsContext, 'refreshCredential' | 'note'>): Map<string, DeliveredCredential> {
  const out = new Map<string, DeliveredCredential>();
  for (const local of assignment.localIntegrations) {
    if (!local.egress) continue;
    const integration = assignment.integrations.find((i) => i.packageId === local.packageId && i.source.kind === 'local' && i.delivery !== null);
    if (integration) out.set(local.packageId, deliveredCredential(integration, ctx));
  }
  return out;
}

export interface SidecarServerOptions {
  /** name resolution of the model provider's host; the system resolver when absent (tests pin answers) */
  resolve?: EgressOptions['resolve'];
  /** the local servers' egress proxy's port; LOCAL_EGRESS_PROXY_PORT when absent (tests take 0: any) */
  localEgressPort?: number;
}

export class SidecarHttpServer {
  private run: AssignedRun | null = null;
  readonly server: Server;
  private socketServer: Server | null = null;
  private port: number | undefined;
  private listenHost = '127.0.0.1';
  private localEgress: Promise<LocalEgressProxy> | null = null;

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
    this.listenHost = host;
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
    const warn = (message: string) => process.stderr.write(`sidecar: ${message}\n`);
    const checkpoints = assignment.checkpointUrl ? new CheckpointForwarder(assignment.checkpointUrl, assignment.eventSecret, { maxBackoffMs, warn }) : null;
    const events = new EventPoster({
      eventsUrl: assignment.eventsUrl, secret: assignment.eventSecret, maxBackoffMs, ...hooks,
      // a run woken from its park goes on numbering its events where its last sandbox stopped
      ...(assignment.firstSequence ? { firstSequence: assignment.firstSequence } : {}),
      ...(checkpoints ? { beforeEnd: () => checkpoints.settled() } : {}),
      ...(tracing.recording ? { spans: () => tracing.recorder.take(), traceparent: tracing.recorder.traceparent } : {}),
    });
    const egress = this.egressOptions(assignment);
    const refreshCredential = assignment.connectionsUrl ? platformCredentialRefresh(assignment.connectionsUrl, assignment.eventSecret) : undefined;
    const infoNote = (message: string) => void events.emit('log', { level: 'info', message });
    const injected = injectedCredentials(assignment, { refreshCredential, note: infoNote });
    // the run's certificate authority: only when a local server's credential is to be injected (its HTTPS ends here)
    const runCa = injected.size > 0 ? createRunCa() : Promise.resolve(null);
    const integrations = runCa.then((ca) => integrationTools(assignment.integrations, {
      egress,
      proxy: assignment.proxy ?? null,
      refreshCredential,
      note: infoNote,
      ...(tracing.recording ? { upstreamSpan: (method: string, target: URL) => tracing.upstreamSpan(method, target) } : {}),
    }, assignment.localIntegrations, (packageId) => (ca && injected.has(packageId) ? ca.certPem : undefined)));
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
    const park = new ParkHandover(assignment.checkpointUrl, assignment.eventSecret);
    const ending = new AbortController();
    const gate = {
      signal: ending.signal,
      handOver: () => park.handOver(),
      beforeAsk: () => events.flush(),
      approvalsUrl: assignment.approvalsUrl,
      secret: assignment.eventSecret,
      tools: assignment.approvals?.tools ?? [],
      timeoutSeconds: assignment.approvals?.timeoutSeconds ?? 86_400,
      note: (message: string) => void events.emit('log', { level: 'info', message }),
    };
    // traced outside the gate: a tool span covers the wait for a person's decision too
    const mcp = integrations.then((found) => mcpToolServer(tracing.traceTools(gatedTools([...found.tools, ...tools], gate))));
    this.startLocalEgress(assignment, egress, injected, runCa, (message) => events.emit('log', { level: 'warn', message }));
    this.run = { assignment, tokenDigest: sha256(assignment.token), events, mcp, integrations, budget: new ModelBudget(assignment.budget), tracing, checkpoints, park, ending };
    events.emit('started', {});
    events.startHeartbeat(assignment.heartbeatSeconds);
    return events;
  }

  /** The egress guard's options for this run: the operator's allowlist; never the platform, never this sidecar. */
  private egressOptions(assignment: SidecarAssignment): EgressOptions {
    return {
      allowInternalHosts: assignment.egressAllowInternalHosts,
      platformEndpoints: [
        ...assignment.egressPlatformEndpoints,
        ...(this.port ? [{ host: '127.0.0.1', port: this.port }] : []),
        { host: '127.0.0.1', port: this.opts.localEgressPort ?? LOCAL_EGRESS_PROXY_PORT },
      ],
      resolve: this.opts.resolve,
      ...(assignment.egressExtraCa ? { extraCa: assignment.egressExtraCa } : {}),
    };
  }

  /**
   * The egress proxy of the run's local servers (those the runner gave a way out), on the address
   * the sidecar serves its run on (the docker backend: every network of the sidecar; only a server
   * presenting its own secret is served).
   */
  private startLocalEgress(assignment: SidecarAssignment, egress: EgressOptions, injected: Map<string, DeliveredCredential>, runCa: Promise<RunCertificateAuthority | null>, note: (message: string) => void): void {
    const clients = assignment.localIntegrations.flatMap((l) => {
      if (!l.egress) return [];
      const credential = injected.get(l.packageId);
      return [{ packageId: l.packageId, ...l.egress, ...(credential ? { credential } : {}) }];
    });
    if (clients.length === 0) return;
    this.localEgress = runCa.then((ca) => {
      const proxy = localEgressProxy({ clients, egress, proxy: assignment.proxy ?? null, note, ca });
      return proxy.listen(this.listenHost, this.opts.localEgressPort ?? LOCAL_EGRESS_PROXY_PORT).then(() => proxy, async (err: Error) => {
        await proxy.close();
        throw err;
      });
    });
    this.localEgress.catch((err: Error) => {
      note(`the local MCP servers' egress proxy could not listen: ${(err as { code?: string }).code ?? err.message}`);
    });
  }

  /** Closes the remote integrations' sessions, and the local servers' egress proxy. */
  async close(): Promise<void> {
    this.run?.checkpoints?.close();
    await (await this.localEgress?.catch(() => null))?.close();
    await (await this.run?.integrations)?.close();
  }

  /**
   * Ends the session for good (a long-lived host's run ended): stops posting, ends the waits on
   * the platform, stops listening on its port and socket, closes its integrations, and lets go of
   * the assignment, so nothing of the run (token, secrets) stays reachable from this object.
   */
  async shutdown(): Promise<void> {
    const run = this.run;
    run?.events.close();
    run?.ending.abort(new Error('the run ended'));
    const closing = [this.server, this.socketServer].filter((s): s is Server => s !== null && s.listening).map((s) => new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    }));
    await this.close().catch(() => undefined);
    await Promise.all(closing);
    this.run = null;
    this.socketServer = null;
    this.localEgress = null;
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

    const modelEndpoint = MODEL_PATHS.get(path);
    if (modelEndpoint && method === 'POST') {
      return proxyModelCall(res, modelEndpoint, body, run.assignment.model, run.events, this.egressOptions(run.assignment), run.budget, undefined, run.tracing);
    }
    if (path === '/v1/models' && method === 'GET') return answerModels(res, run.assignment.model);
    if (path === '/mcp') return handleMcp(await run.mcp, req, res, body);
    if (path === '/runtime/events' && method === 'POST') return acceptRuntimeEvent(res, body, run.events);
    if (path === '/runtime/checkpoint' && method === 'POST') return relayCheckpoint(res, body, run.checkpoints);
    if (path === '/runtime/pending' && method === 'POST') return run.park.accept(res, body);
    if (path === '/runtime/approvals' && method === 'GET') return sendJson(res, 200, { tools: run.assignment.approvals?.tools ?? [] });
    if (path === '/runtime/checkpoint' && method === 'GET') return fetchResumeCheckpoint(res, run.assignment.resumes ? run.assignment.checkpointUrl : undefined, run.assignment.eventSecret);
    sendJson(res, 404, { error: `no route ${method} ${path}` });
  }
}
