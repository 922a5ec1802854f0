// The execution backend chosen by RUN_ADAPTER, and the run activities that use it.
import fs from 'node:fs';
import path from 'node:path';
import type { AppDeps } from '../api/deps.ts';
import { resolveRunModel } from '../api/modules/core-providers/resolve-model.ts';
import { resolveDeclaredSkills, resolveRunnableAgent } from '../api/services/packages/dependencies.ts';
import { createRunActivities } from '../activities/run-activities.ts';
import { inputFilesForWorkspace } from '../api/services/files/run-files.ts';
import { createProcessAdapter } from '../activities/sandbox/process-adapter.ts';
import type { SandboxAdapter } from '../activities/sandbox/adapter.ts';
import type { RunActivities } from '../workflows/run-types.ts';

export async function createSandboxAdapter(deps: AppDeps, dataDir: string): Promise<SandboxAdapter> {
  const { config } = deps;
  if (config.RUN_ADAPTER !== 'process') {
    throw new Error(`RUN_ADAPTER=${config.RUN_ADAPTER} is not available in this build; use RUN_ADAPTER=process.`);
  }
  const workDir = path.join(dataDir, 'sandboxes');
  // Sandboxes do not outlive the process that started them: folders left by a crash are stale.
  fs.rmSync(workDir, { recursive: true, force: true });
  return createProcessAdapter({
    warmPool: config.SANDBOX_WARM_POOL,
    workDir,
    log: deps.log,
    poolMemoryMb: config.PLATFORM_RUN_LIMITS.agent_memory_ceiling_mb,
  });
}

export function runActivitiesFor(deps: AppDeps, adapter: SandboxAdapter): RunActivities {
  const { config } = deps;
  const limits = config.PLATFORM_RUN_LIMITS;
  return createRunActivities({
    pool: deps.database.pool,
    db: deps.database.db,
    secrets: deps.secrets,
    log: deps.log,
    adapter,
    materials: {
      agent: (scope, agentId, version) => resolveRunnableAgent(scope, agentId, version),
      model: (scope, modelId) => resolveRunModel(scope, deps.secrets, modelId),
      skills: (scope, owner, skills) => resolveDeclaredSkills(scope, owner, skills),
      inputFiles: (runId, schema, input) => inputFilesForWorkspace(deps.database.pool, config, runId, schema, input),
    },
    eventsBaseUrl: config.INTERNAL_API_URL ?? `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${config.PORT}`,
    bootSeconds: config.RUN_BOOT_SECONDS,
    heartbeatSeconds: config.RUN_HEARTBEAT_SECONDS,
    egressAllowInternalHosts: config.EGRESS_ALLOW_INTERNAL_HOSTS,
    egressPlatformEndpoints: deps.platformEndpoints ?? [],
    limits: { memoryMb: limits.agent_memory_ceiling_mb, cpus: limits.agent_cpu_ceiling },
  });
}
