// The side effects of the run workflow: start the sandbox, report liveness facts, finalize once,
// tear down. Materials (the agent's files, the model and its key) are resolved by the host and
// handed in, so this room depends on lib/ and db/ only.
import { captureMessageContent, withSpan } from '../lib/tracing/index.ts';
import type pg from 'pg';
import type { AgentManifest } from '../lib/afps/manifest-types.ts';
import type { SecretBox } from '../lib/crypto.ts';
import type { PlatformEndpoint } from '../lib/egress.ts';
import type { OutboundProxy } from '../lib/proxy-tunnel.ts';
import { layeredSettings } from '../lib/model-settings.ts';
import type { Logger } from '../lib/log.ts';
import { runBudgetAtBoot } from '../db/budgets.ts';
import { finalizeRun } from '../db/run-finalization.ts';
import { expireApproval } from '../db/run-approvals.ts';
import { startingCheckpoint } from '../db/run-checkpoints.ts';
import { markParked, markWoken, parkHandedOver, requestPark, withdrawPark } from '../db/run-parking.ts';
import type { Db } from '../db/client.ts';
import type { OrgScope, SpaceScope } from '../db/tenant.ts';
import { activityFailure, type RecordedEnding, type RunActivities, type RunEnding, type SandboxRef } from '../workflows/run-types.ts';
import { refusedLocalImage, type LocalImageSettings } from '../lib/local-integration-images.ts';
import type { IntegrationAssignment, LocalServerSpec, SandboxAdapter, WorkspaceFile } from './sandbox/adapter.ts';

export interface RunMaterials {
  /** a published version; or, for a draft run, the draft snapshot stored with the run at launch */
  agent(scope: SpaceScope, agentId: string, version: string, draftSnapshot?: unknown): Promise<{ manifest: AgentManifest; files: Map<string, Buffer>; skills: Array<{ id: string; files: Map<string, Buffer> }> }>;
  model(scope: OrgScope, modelId: string | null): Promise<{
    model: string; baseUrl: string; apiKey: string; proxy?: OutboundProxy | null; provider?: string;
    /** the model's default settings and what it accepts (absent: the sidecar leaves calls as they come) */
    temperature?: number | null; reasoningEffort?: string | null; supportsTemperature?: boolean; reasoningLevels?: string[];
    /** the OpenAI endpoints besides chat completions its provider serves, and the models an embeddings call may name (absent: chat only, the run's model) */
    offers?: Array<'responses' | 'embeddings'>; embeddingModels?: string[];
  }>;
  /** the skills an inline manifest declares, resolved in the run's space */
  skills(scope: SpaceScope, owner: string, skills: Record<string, string>): Promise<Array<{ id: string; files: Map<string, Buffer> }>>;
  /** the connections the run recorded at launch, decrypted for its sidecar (absent: the run uses none) */
  integrations?(scope: SpaceScope, runId: string, agent: AgentManifest): Promise<IntegrationAssignment[]>;
  /** the local integrations' servers the runner starts (absent: none) */
  localServers?(scope: SpaceScope, owner: string, agent: AgentManifest, runId: string): Promise<LocalServerSpec[]>;
  /** the files the input names, as input/<name>, and the input as the agent sees it (file fields point there) */
  inputFiles?(runId: string, inputSchema: unknown, input: Record<string, unknown>): Promise<{ files: WorkspaceFile[]; input: Record<string, unknown> }>;
}

export interface RunActivityOptions {
  pool: pg.Pool;
  db: Db;
  secrets: SecretBox;
  log: Logger;
  adapter: SandboxAdapter;
  materials: RunMaterials;
  /** where sandboxes reach this platform's runner routes (/internal/runs/...) */
  eventsBaseUrl: string;
  /**
   * this worker's id in the fleet: its sandboxes post their events naming it, and the sink refuses
   * them once the run is placed on another worker (absent: not checked)
   */
  placement?: string;
  bootSeconds: number;
  heartbeatSeconds: number;
  /** RUN_PARK_AFTER_SECONDS: how long a run waits for an approval holding its sandbox (absent: never parked) */
  parkAfterSeconds?: number;
  /** how long parking waits for the sidecar to hand the run's pending state over (20 s when absent) */
  parkHandoverMs?: number;
  /** EGRESS_ALLOW_INTERNAL_HOSTS: the sidecar's model calls pass the same egress guard as the platform's */
  egressAllowInternalHosts: string[];
  /** the platform's own endpoints: a model provider is never one of them */
  egressPlatformEndpoints?: PlatformEndpoint[];
  /** SANDBOX_EGRESS_CA_FILE's certificates: the sidecar trusts them beside the system's */
  egressExtraCa?: string;
  limits: { memoryMb: number; cpus: number };
  /** the images local integrations may name (LOCAL_INTEGRATION_IMAGES, the agent image) */
  localImages?: LocalImageSettings;
}

interface BootRow {
  id: string;
  org_id: string;
  space_id: string;
  agent_id: string;
  agent_version: string;
  status: string;
  kind: string;
  input: unknown;
  model_id: string | null;
  model_settings: { temperature?: number | null; reasoning_effort?: string | null } | null;
  timeout_seconds: number;
  event_secret: string;
  actor_user_id: string | null;
  api_key_id: string | null;
  end_user_id: string | null;
  inline_manifest: AgentManifest | null;
  inline_prompt: string | null;
  draft_snapshot: unknown;
  resumed_from: string | null;
  parked: boolean;
  last_sequence: number;
}

const REMOTE = 'remote';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Each skill's folder under skills/: its name (the package id @scope/name without its scope).
 * Two skills of one run with the same name from different scopes both keep their scope instead
 * (skills/<scope>__<name>), so neither is silently replaced and the folder says which is which.
 */
export function skillFolders(ids: string[]): Map<string, string> {
  const nameOf = (id: string) => id.slice(id.indexOf('/') + 1);
  const count = new Map<string, number>();
  for (const id of ids) count.set(nameOf(id), (count.get(nameOf(id)) ?? 0) + 1);
  return new Map(ids.map((id) => [id, count.get(nameOf(id))! > 1 ? id.replace(/^@/, '').replace('/', '__') : nameOf(id)]));
}

function placeSkills(workspace: WorkspaceFile[], skills: Array<{ id: string; files: Map<string, Buffer> }>): void {
  const folders = skillFolders(skills.map((s) => s.id));
  for (const skill of skills) {
    for (const [path, content] of skill.files) workspace.push({ path: `skills/${folders.get(skill.id)}/${path}`, content });
  }
}

/**
 * Why this backend cannot start the run's local servers (the settings may have changed since the
 * launch checked them), or null.
 */
function localServerRefusal(o: RunActivityOptions, servers: LocalServerSpec[]): string | null {
  if (servers.length === 0) return null;
  if (o.adapter.kind === 'process') {
    return `${servers[0].packageId} runs a local MCP server, which the process backend (RUN_ADAPTER=process) cannot start.`;
  }
  for (const s of servers) {
    const image = s.image !== null && o.localImages ? refusedLocalImage({ kind: 'local', command: s.command, image: s.image }, o.localImages) : null;
    if (image) return `${s.packageId} runs its local MCP server in the image ${image}, which LOCAL_INTEGRATION_IMAGES does not allow.`;
  }
  return null;
}

export function createRunActivities(o: RunActivityOptions): RunActivities {
  const { pool } = o;

  /** A resumed run's workspace: its materials as the original's start had them, then the files its checkpoint carries. */
  async function restoreCheckpointFiles(row: BootRow, workspace: WorkspaceFile[]): Promise<boolean> {
    const found = await startingCheckpoint(pool, o.secrets, row.id);
    if (!found) {
      if (row.resumed_from) throw activityFailure('no_checkpoint', `The checkpoint of run ${row.resumed_from} is gone.`);
      return false;
    }
    const { state } = found;
    const replaced = new Set([...state.removed, ...state.files.map((f) => f.path)]);
    for (let i = workspace.length - 1; i >= 0; i--) if (replaced.has(workspace[i].path)) workspace.splice(i, 1);
    for (const f of state.files) workspace.push({ path: f.path, content: Buffer.from(f.content, 'base64') });
    return true;
  }

  async function materialsFor(row: BootRow): Promise<{ manifest: AgentManifest; workspace: WorkspaceFile[]; integrations: IntegrationAssignment[]; localServers: LocalServerSpec[]; resumes: boolean }> {
    const scope: SpaceScope = {
      pool, db: o.db, orgId: row.org_id, spaceId: row.space_id,
      actor: { userId: row.actor_user_id ?? '', apiKeyId: row.api_key_id ?? undefined, endUserId: row.end_user_id ?? undefined },
    };
    const workspace: WorkspaceFile[] = [];
    let manifest: AgentManifest;
    if (row.kind === 'inline') {
      if (!row.inline_manifest) throw activityFailure('run_definition_gone', 'The inline run definition was purged.');
      manifest = row.inline_manifest;
      workspace.push({ path: 'prompt.md', content: Buffer.from(row.inline_prompt ?? '') });
      placeSkills(workspace, await o.materials.skills(scope, `inline ${manifest.name}`, manifest.dependencies?.skills ?? {}));
    } else {
      const agent = await o.materials.agent(scope, row.agent_id, row.agent_version, row.draft_snapshot ?? undefined);
      manifest = agent.manifest;
      for (const [path, content] of agent.files) if (path !== 'manifest.json') workspace.push({ path, content });
      placeSkills(workspace, agent.skills);
    }
    let input = (row.input ?? {}) as Record<string, unknown>;
    if (o.materials.inputFiles) {
      const placed = await o.materials.inputFiles(row.id, manifest.input?.schema, input);
      workspace.push(...placed.files);
      input = placed.input;
    }
    workspace.push({ path: 'input.json', content: Buffer.from(JSON.stringify(input, null, 2)) });
    const resumes = await restoreCheckpointFiles(row, workspace);
    const integrations = o.materials.integrations ? await o.materials.integrations(scope, row.id, manifest) : [];
    const localServers = o.materials.localServers ? await o.materials.localServers(scope, `${row.agent_id}@${row.agent_version}`, manifest, row.id) : [];
    return { manifest, workspace, integrations, localServers, resumes };
  }

  const activities: RunActivities = {
    async boot(runId, context): Promise<SandboxRef> {
      const { rows } = await pool.query<BootRow>(
        `SELECT id, org_id, space_id, agent_id, agent_version, status, kind, input, model_id, model_settings, timeout_seconds, event_secret,
                actor_user_id, api_key_id, end_user_id, inline_manifest, inline_prompt, draft_snapshot, resumed_from,
                parked_at IS NOT NULL AS parked, last_sequence
           FROM runs WHERE id = $1`,
        [runId],
      );
      const row = rows[0];
      if (!row) throw activityFailure('run_not_found', `Run ${runId} does not exist.`);
      const timings = {
        timeoutSeconds: row.timeout_seconds, bootSeconds: o.bootSeconds, heartbeatSeconds: o.heartbeatSeconds,
        ...(o.parkAfterSeconds && row.kind !== REMOTE ? { parkAfterSeconds: o.parkAfterSeconds } : {}),
      };
      const waking = context?.wake === true;
      if (waking && (row.status !== 'running' || !row.parked)) throw activityFailure('run_not_parked', `Run ${runId} is ${row.status}; there is no parked run to wake.`);
      // A remote runner holds its sink from creation and may report `started` before the engine
      // gets here: running is as good as pending for it.
      if (row.kind === REMOTE && row.status === 'running') return { sandboxId: REMOTE, ...timings };
      // A run cancelled (or otherwise ended) before its sandbox started is not started at all.
      if (row.status !== 'pending' && !waking) throw activityFailure('run_not_pending', `Run ${runId} is ${row.status}; nothing to start.`);
      if (row.kind === REMOTE) return { sandboxId: REMOTE, ...timings };

      let materials: Awaited<ReturnType<typeof materialsFor>>;
      let model: Awaited<ReturnType<RunMaterials['model']>>;
      try {
        materials = await materialsFor(row);
        model = await o.materials.model({ pool, db: o.db, orgId: row.org_id, actor: { userId: row.actor_user_id ?? '' } }, row.model_id);
      } catch (err) {
        // The agent or its model went away between launch and boot: a definite ending, no retry.
        const code = (err as { code?: string }).code;
        if (code) throw activityFailure(code, (err as Error).message);
        throw err;
      }
      const refused = localServerRefusal(o, materials.localServers);
      if (refused) throw activityFailure('local_integration_unavailable', refused);
      const base = `${o.eventsBaseUrl}/internal/runs/${runId}`;
      const manifest = materials.manifest;
      // what the sidecar lets the run spend: its own limit, and what is left of the organization's month
      const budget = await runBudgetAtBoot(pool, row.org_id);
      const { sandboxId } = await withSpan('sandbox start', { 'agent_platform.sandbox.backend': o.adapter.kind }, () => o.adapter.start({
        runId,
        workspace: materials.workspace,
        sidecar: {
          runId,
          eventsUrl: o.placement ? `${base}/events?placement=${encodeURIComponent(o.placement)}` : `${base}/events`,
          eventSecret: o.secrets.open(row.event_secret),
          model: {
            baseUrl: model.baseUrl, apiKey: model.apiKey, model: model.model, proxy: model.proxy ?? null,
            // the run's own settings, else the model's: the defaults of every call the agent makes
            defaults: layeredSettings(
              { temperature: row.model_settings?.temperature, reasoningEffort: row.model_settings?.reasoning_effort },
              { temperature: model.temperature, reasoningEffort: model.reasoningEffort },
            ),
            ...(model.supportsTemperature !== undefined ? { accepts: { supportsTemperature: model.supportsTemperature, reasoningLevels: model.reasoningLevels ?? [] } } : {}),
            // the Responses API and embeddings where the provider offers them
            ...(model.offers ? { offers: model.offers } : {}),
            ...(model.embeddingModels ? { embeddingModels: model.embeddingModels } : {}),
          },
          outputSchema: (manifest.output?.schema as Record<string, unknown> | undefined) ?? null,
          runtimeTools: manifest.runtime_tools ?? [],
          heartbeatSeconds: o.heartbeatSeconds,
          historyUrl: `${base}/history`,
          memoryUrl: `${base}/memory`,
          publishUrl: `${base}/files`,
          checkpointUrl: `${base}/checkpoint`,
          resumes: materials.resumes,
          ...(waking ? { firstSequence: row.last_sequence + 1 } : {}),
          connectionsUrl: `${base}/connections`,
          approvalsUrl: `${base}/approvals`,
          approvals: manifest.approvals ? { tools: manifest.approvals.tools, timeoutSeconds: manifest.approvals.timeout_seconds } : null,
          egressAllowInternalHosts: o.egressAllowInternalHosts,
          egressPlatformEndpoints: o.egressPlatformEndpoints ?? [],
          ...(o.egressExtraCa ? { egressExtraCa: o.egressExtraCa } : {}),
          integrations: materials.integrations,
          // the organization's default proxy (resolved with the model) carries its integration traffic too
          proxy: model.proxy ?? null,
          budget,
          ...(context?.traceparent ? {
            trace: { traceparent: context.traceparent, captureMessageContent: captureMessageContent(), provider: model.provider, agentName: row.agent_id ?? manifest.name },
          } : {}),
        },
        limits: o.limits,
        localServers: materials.localServers,
      }));
      if (waking) await markWoken(pool, runId);
      return { sandboxId, ...timings };
    },

    async park(runId, sandboxId, approvalId) {
      if (sandboxId === REMOTE || !(await requestPark(pool, runId, approvalId))) return { parked: false };
      // the sidecar reads the request a few times a second and hands the run's pending state over
      const until = Date.now() + (o.parkHandoverMs ?? 20_000);
      let handed = false;
      while (!handed && Date.now() < until) {
        await sleep(100);
        handed = await parkHandedOver(pool, runId, approvalId);
      }
      if (!handed && !(await withdrawPark(pool, runId, approvalId))) {
        o.log.warn('the run was not parked: its sidecar did not hand its pending state over', { run_id: runId, approval_id: approvalId });
        return { parked: false };
      }
      await o.adapter.stop(sandboxId);
      await markParked(pool, runId);
      o.log.info('run parked', { run_id: runId, approval_id: approvalId });
      return { parked: true };
    },

    async lastHeartbeatAt(runId) {
      const { rows } = await pool.query<{ at: Date | null; created_at: Date }>('SELECT last_event_at AS at, created_at FROM runs WHERE id = $1', [runId]);
      const r = rows[0];
      return r ? (r.at ?? r.created_at).getTime() : null;
    },

    async sandboxAlive(runId, sandboxId) {
      // A run already finalized elsewhere (cancelled through the API) needs its sandbox stopped.
      const { rows } = await pool.query<{ status: string }>('SELECT status FROM runs WHERE id = $1', [runId]);
      if (!rows[0]) return false;
      if (!['pending', 'running'].includes(rows[0].status)) return 'ended';
      if (sandboxId === REMOTE) return true;
      const state = await o.adapter.state(sandboxId);
      return state === 'ending' ? 'ending' : state === 'running';
    },

    async bootCheck(runId, sandboxId) {
      const { rows } = await pool.query<{ status: string; kind: string }>('SELECT status, kind FROM runs WHERE id = $1', [runId]);
      const row = rows[0];
      const run = !row ? 'gone' : row.status === 'pending' || row.status === 'running' ? row.status : 'ended';
      if (sandboxId === REMOTE) return { run, sandbox: 'running' };
      // asked first: a backend whose sandboxes outlive their worker (docker) adopts a live one here
      const state = await o.adapter.state(sandboxId);
      // A gone sandbox this worker never held was started by one that died since, and went with it.
      if (state === 'gone' && !o.adapter.sandboxes().some((s) => s.sandboxId === sandboxId)) return { run, sandbox: 'unknown' };
      return { run, sandbox: state };
    },

    async finalize(runId: string, ending: RunEnding) {
      // a boot deadline never ends a run whose first event was accepted meanwhile
      const bootDeadline = ending.status === 'failed' && ending.error.code === 'boot_timeout';
      const { finalized } = await finalizeRun(pool, runId, ending, bootDeadline ? ['pending'] : undefined);
      if (finalized) return { finalized };
      // Someone else ended the run first: the workflow ends the way the run did.
      const { rows } = await pool.query<{ status: RecordedEnding['status']; code: string | null }>(
        `SELECT status, error->>'code' AS code FROM runs WHERE id = $1`, [runId]);
      const r = rows[0];
      return r ? { finalized, recorded: r.code === null ? { status: r.status } : { status: r.status, code: r.code } } : { finalized };
    },

    async teardown(runId, sandboxId) {
      if (sandboxId !== REMOTE) await o.adapter.stop(sandboxId);
      o.log.debug('run torn down', { run_id: runId });
    },

    expireApproval: (runId, approvalId) => expireApproval(pool, runId, approvalId),
  };
  return activities;
}
