// The execution backend chosen by RUN_ADAPTER, and the run activities that use it.
import fs from 'node:fs';
import path from 'node:path';
import type { AppDeps } from '../api/deps.ts';
import { modelsSharingCredential, resolveRunModel } from '../api/modules/core-providers/resolve-model.ts';
import { providerAdapter } from '../api/modules/core-providers/providers.ts';
import { resolveDeclaredSkills, resolveRunnableAgent } from '../api/services/packages/dependencies.ts';
import { loadDraftSnapshot, type DraftSnapshot } from '../api/services/packages/draft-runs.ts';
import type { RunMaterials } from '../activities/run-activities.ts';
import { createRunActivities } from '../activities/run-activities.ts';
import { runCredentialEnv, runIntegrations } from '../api/services/integrations/run-credentials.ts';
import { runLocalServers } from '../api/services/integrations/local-servers.ts';
import { allowedLocalImages } from '../lib/local-integration-images.ts';
import { inputFilesForWorkspace } from '../api/services/files/run-files.ts';
import { createProcessAdapter } from '../activities/sandbox/process-adapter.ts';
import { checkConfinement } from './sandbox-confinement.ts';
import { createDockerAdapter, DOCKER_WORK_FOLDER } from '../activities/sandbox/docker-adapter.ts';
import { ensureSandboxImages } from '../activities/sandbox/docker-images.ts';
import { projectRoot } from '../lib/project-root.ts';
import Docker from 'dockerode';
import type { SandboxAdapter } from '../activities/sandbox/adapter.ts';
import type { RunActivities } from '../workflows/run-types.ts';

export async function createSandboxAdapter(deps: AppDeps, dataDir: string): Promise<SandboxAdapter> {
  const { config } = deps;
  if (config.RUN_ADAPTER === 'docker') {
    const docker = new Docker({ socketPath: config.DOCKER_SOCKET });
    try {
      await docker.ping();
    } catch (err) {
      throw new Error(`RUN_ADAPTER=docker: no docker engine answers on ${config.DOCKER_SOCKET} (${(err as Error).message})`);
    }
    const images = await ensureSandboxImages(docker, {
      root: projectRoot(), sidecarImage: config.DOCKER_SIDECAR_IMAGE, agentImage: config.DOCKER_AGENT_IMAGE, log: deps.log,
    });
    // unlike the process backend's, these folders outlive the worker: a restarted worker adopts the pairs
    return createDockerAdapter({
      workDir: path.join(dataDir, DOCKER_WORK_FOLDER), socketPath: config.DOCKER_SOCKET, log: deps.log, ...images,
      localIntegrationImages: allowedLocalImages(config),
      warmPool: config.SANDBOX_WARM_POOL,
      poolMemoryMb: config.PLATFORM_RUN_LIMITS.agent_memory_ceiling_mb,
      poolCpus: config.PLATFORM_RUN_LIMITS.agent_cpu_ceiling,
    });
  }
  if (config.RUN_ADAPTER !== 'process') {
    throw new Error(`RUN_ADAPTER=${config.RUN_ADAPTER} is not available in this build; use RUN_ADAPTER=process or docker.`);
  }
  const workDir = path.join(dataDir, 'sandboxes');
  // Sandboxes do not outlive the process that started them: folders left by a crash are stale.
  fs.rmSync(workDir, { recursive: true, force: true });
  const adapter = await createProcessAdapter({
    warmPool: config.SANDBOX_WARM_POOL,
    workDir,
    log: deps.log,
    poolMemoryMb: config.PLATFORM_RUN_LIMITS.agent_memory_ceiling_mb,
    unconfinedShellUnsafe: config.SANDBOX_UNCONFINED_SHELL_UNSAFE,
  });
  try {
    deps.lifecycle.warnings.push(...checkConfinement(adapter.isolation, { dataDir, required: config.SANDBOX_CONFINEMENT === 'required', log: deps.log }));
  } catch (err) {
    await adapter.close();
    throw err;
  }
  return adapter;
}

/** Where a run's agent, skills and model come from: a draft run from its launch snapshot. */
export function runMaterialsFor(deps: Pick<AppDeps, 'secrets' | 'config' | 'platformEndpoints' | 'database'>): RunMaterials {
  return {
    agent: (scope, agentId, version, draftSnapshot) =>
      draftSnapshot ? loadDraftSnapshot(scope, draftSnapshot as DraftSnapshot) : resolveRunnableAgent(scope, agentId, version),
    model: async (scope, modelId) => {
      const model = await resolveRunModel(scope, deps.secrets, modelId);
      // what the sidecar serves beside chat completions: the provider's other endpoints, embeddings
      // with the organization's models on the same credential
      return { ...model, offers: [...(providerAdapter(model.provider)?.offers ?? [])], embeddingModels: await modelsSharingCredential(scope, model.modelId) };
    },
    skills: (scope, owner, skills) => resolveDeclaredSkills(scope, owner, skills),
    integrations: (scope, runId, agent) => runIntegrations(scope, deps.secrets, {
      allowInternalHosts: deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints: deps.platformEndpoints,
    }, runId, agent),
    localServers: async (scope, owner, agent, runId) => runLocalServers(scope, owner, agent, await runCredentialEnv(scope, deps.secrets, {
      allowInternalHosts: deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints: deps.platformEndpoints,
    }, runId)),
    inputFiles: (runId, schema, input) => inputFilesForWorkspace(deps.database.pool, deps.config, runId, schema, input),
  };
}

/** `placement`: the worker's id in the fleet (RunActivityOptions.placement) */
export function runActivitiesFor(deps: AppDeps, adapter: SandboxAdapter, placement?: string): RunActivities {
  const { config } = deps;
  const limits = config.PLATFORM_RUN_LIMITS;
  return createRunActivities({
    pool: deps.database.pool,
    db: deps.database.db,
    secrets: deps.secrets,
    log: deps.log,
    adapter,
    materials: runMaterialsFor(deps),
    eventsBaseUrl: config.INTERNAL_API_URL ?? `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${config.PORT}`,
    ...(placement ? { placement } : {}),
    bootSeconds: config.RUN_BOOT_SECONDS,
    heartbeatSeconds: config.RUN_HEARTBEAT_SECONDS,
    parkAfterSeconds: config.RUN_PARK_AFTER_SECONDS,
    egressAllowInternalHosts: config.EGRESS_ALLOW_INTERNAL_HOSTS,
    egressPlatformEndpoints: deps.platformEndpoints ?? [],
    ...(config.SANDBOX_EGRESS_CA_FILE ? { egressExtraCa: fs.readFileSync(config.SANDBOX_EGRESS_CA_FILE, 'utf8') } : {}),
    limits: { memoryMb: limits.agent_memory_ceiling_mb, cpus: limits.agent_cpu_ceiling },
    localImages: config,
  });
}
