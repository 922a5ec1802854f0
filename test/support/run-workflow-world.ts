// A scripted outside world for the `run` workflow: activities are plain functions recording their
// calls, per run id; and the workflow served to a real Restate server, for integration tests.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startRestateServer, type RestateServer } from '../../restate/launcher.ts';
import { freePort } from '../../lib/free-port.ts';
import { queryInvocations, registerDeployment, sqlString } from '../../restate/admin.ts';
import { startWorkflowEndpoint, type WorkflowEndpoint } from '../../workflows/endpoint.ts';
import { createRunWorkflow, type RunWorkflowOptions } from '../../workflows/run.ts';
import { createRunWorkflowClient, type RunWorkflowClient } from '../../workflows/run-client.ts';
import type { BootCheck, RecordedEnding, RunActivities, RunEnding, SandboxRef } from '../../workflows/run-types.ts';


// Small timings keep the tests short: boot 2 s, heartbeat 1 s (liveness tick 2 s, stale after 3 s), timeout 3 s.
export const TIMINGS = { bootSeconds: 2, heartbeatSeconds: 1, timeoutSeconds: 3 };

export interface RunScript {
  /** Returns the sandbox or throws; called once per boot attempt (1-based). */
  boot(attempt: number): SandboxRef | Promise<SandboxRef>;
  alive(): boolean;
  /** false once the worker that holds the sandbox has died (the boot check sees it unknown) */
  sandboxKnown(): boolean;
  /** the run's status as the boot check reads it from the db */
  runStatus(): BootCheck['run'];
  lastEventAt(): number | null;
  teardownFails: boolean;
  /** Someone else (the API's cancel path, say) finalized the run first. */
  finalizedElsewhere: boolean;
  /** What that other party recorded, as the finalize activity reports it. */
  recordedElsewhere?: RecordedEnding;
  /** The first finalize call waits for it. */
  finalizeGate?: Promise<void>;
}

export interface RunRecord {
  script: RunScript;
  bootAttempts: number;
  finalizeCalls: RunEnding[];
  teardowns: string[];
}

/** The world outside the workflow, per run id: activities are plain functions recording their calls. */
export function aSandboxWorld() {
  const runs = new Map<string, RunRecord>();
  const recordOf = (runId: string) => {
    const record = runs.get(runId);
    if (!record) throw new Error(`unknown run ${runId}`);
    return record;
  };
  const activities: RunActivities = {
    async boot(runId) {
      const record = recordOf(runId);
      record.bootAttempts += 1;
      return record.script.boot(record.bootAttempts);
    },
    async lastHeartbeatAt(runId) {
      return recordOf(runId).script.lastEventAt();
    },
    async sandboxAlive(runId) {
      return recordOf(runId).script.alive();
    },
    async bootCheck(runId) {
      const { script } = recordOf(runId);
      return { run: script.runStatus(), sandbox: !script.sandboxKnown() ? 'unknown' : script.alive() ? 'running' : 'gone' };
    },
    async finalize(runId, ending) {
      const record = recordOf(runId);
      record.finalizeCalls.push(ending);
      if (record.finalizeCalls.length === 1) await record.script.finalizeGate;
      const first = !record.script.finalizedElsewhere && record.finalizeCalls.length === 1;
      const { recordedElsewhere } = record.script;
      return first || !recordedElsewhere ? { finalized: first } : { finalized: first, recorded: recordedElsewhere };
    },
    async teardown(runId, sandboxId) {
      const record = recordOf(runId);
      if (record.script.teardownFails) throw new Error('docker daemon unreachable');
      record.teardowns.push(sandboxId);
    },
    // these scripted runs make no approval requests
    expireApproval: async () => false,
  };
  function aRun(overrides: Partial<RunScript> & { timings?: Partial<typeof TIMINGS> } = {}) {
    const runId = `run_${randomUUID()}`;
    const { timings, ...script } = overrides;
    const sandbox: SandboxRef = { sandboxId: `sbx_${runId}`, ...TIMINGS, ...timings };
    const record: RunRecord = {
      script: {
        boot: () => sandbox,
        alive: () => true,
        sandboxKnown: () => true,
        runStatus: () => 'pending',
        lastEventAt: () => Date.now(),
        teardownFails: false,
        finalizedElsewhere: false,
        ...script,
      },
      bootAttempts: 0,
      finalizeCalls: [],
      teardowns: [],
    };
    runs.set(runId, record);
    return { runId, sandbox, record };
  }
  return { activities, aRun };
}

export const quietLogger = (meta: { level: string }, message?: unknown, ...rest: unknown[]) => {
  if (meta.level === 'error') console.error(message, ...rest);
};

export interface WorkflowHarness {
  server: RestateServer;
  client: RunWorkflowClient;
  /** the worker goes away: the workflow endpoint stops answering (the engine retries meanwhile) */
  endpointDown(): Promise<void>;
  /** the worker is back, at the same address */
  endpointUp(): Promise<void>;
  /** how the engine lists the invocation once it completed */
  invocationOutcome(invocationId: string): Promise<{ completion_result?: string; completion_failure?: string } | undefined>;
  close(): Promise<void>;
}

/** A Restate server with the `run` workflow over the given activities registered. */
export async function startWorkflowHarness(activities: RunActivities, options: RunWorkflowOptions = {}): Promise<WorkflowHarness> {
  const baseDir = mkdtempSync(join(tmpdir(), 'restate-run-workflow-'));
  const [ingressPort, adminPort, nodePort, endpointPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const server = await startRestateServer({ baseDir, ingressPort, adminPort, nodePort, logFile: join(baseDir, 'restate.log') });
  const serve = () => startWorkflowEndpoint({ port: endpointPort, services: [createRunWorkflow(activities, options)], logger: quietLogger });
  let endpoint: WorkflowEndpoint | null = await serve();
  await registerDeployment(server.adminUrl, endpoint.url);
  return {
    server,
    client: createRunWorkflowClient(server.ingressUrl),
    async endpointDown() {
      await endpoint?.close();
      endpoint = null;
    },
    async endpointUp() {
      endpoint ??= await serve();
    },
    async invocationOutcome(invocationId) {
      const rows = await queryInvocations<{ completion_result?: string; completion_failure?: string }>(
        server.adminUrl,
        `SELECT completion_result, completion_failure FROM sys_invocation WHERE id = ${sqlString(invocationId)}`,
      );
      return rows[0];
    },
    async close() {
      await endpoint?.close();
      await server.stop();
      rmSync(baseDir, { recursive: true, force: true });
    },
  };
}
