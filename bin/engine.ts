// The workflow engine as the platform hosts it: the embedded Restate server (unless addresses are
// configured), this process's workflow endpoint (worker roles) and the ingress client (API roles).
import fs from 'node:fs';
import path from 'node:path';
import type { AppDeps } from '../api/deps.ts';
import type { Config } from '../lib/config.ts';
import type { Logger } from '../lib/log.ts';
import { registerDeployment, RestateAdminError } from '../restate/admin.ts';
import { startRestateServer } from '../restate/launcher.ts';
import { ensureRequestIdentityKey, requestIdentityPublicKey } from '../restate/request-identity.ts';
import { startSandboxReaper } from '../activities/sandbox/reaper.ts';
import { restateLogTransport, startWorkflowEndpoint } from '../workflows/endpoint.ts';
import { createRunWorkflowClient, type RunWorkflowClient } from '../workflows/run-client.ts';
import { buildWorkflowServices } from '../workflows/services.ts';
import { scheduleActivitiesFor } from '../api/services/schedules/activities.ts';
import { createSandboxAdapter, runActivitiesFor } from './sandbox.ts';
import { choosePortAgain, type PortPlan } from './data-dir.ts';
import { beat, fleetActivities, joinFleet, liveWorkerAt, placedOn, setDraining, workerIdFor, type FleetSettings } from '../activities/fleet.ts';
import { createSandboxHostService } from '../workflows/sandbox-host.ts';
import { RUN_WORKFLOW_NAME } from '../workflows/run-types.ts';
import { runEvery } from '../lib/periodic.ts';
import { restateFetch } from '../lib/restate-failover.ts';

/** The endpoint's accepted request identities: none configured leaves it open to whoever reaches its port. */
function identityKeys(keyFile: string | undefined): string[] | undefined {
  return keyFile ? [requestIdentityPublicKey(keyFile)] : undefined;
}

/** The sandbox reaper runs at least this often, whatever RUN_RECONCILE_SECONDS says. */
const REAP_MAX_SECONDS = 15;

export interface Engine {
  ingressUrl: string;
  adminUrl: string;
  runs: RunWorkflowClient;
  stop(): Promise<void>;
}

interface EngineOptions {
  /** signs and checks the run workflow's signals (lib/signal-mac.ts) */
  signalKey: Buffer;
  config: Config;
  dataDir: string;
  ports: PortPlan;
  deps: AppDeps;
  log: Logger;
  /** aborted when the platform begins to stop: nothing is started again after that */
  stopping?: AbortSignal;
  /** the Restate services of the loaded modules (ApiModule.services) */
  moduleServices?: unknown[];
}

/** Alive and still a Restate server: a zombie, or a pid reused by another program, is not. */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('restate-server');
  } catch {
    // No /proc (not Linux): the signal check is all there is.
    return true;
  }
}

/** SIGTERM, then SIGKILL after 5 s; a recorded pid is signalled only while it is still a Restate server. */
async function endRestate(pid: number): Promise<void> {
  try {
    if (pidAlive(pid)) process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  for (let i = 0; i < 100 && pidAlive(pid); i++) await new Promise((r) => setTimeout(r, 50));
  try {
    if (pidAlive(pid)) process.kill(pid, 'SIGKILL');
  } catch {
    // gone meanwhile
  }
  for (let i = 0; i < 40 && pidAlive(pid); i++) await new Promise((r) => setTimeout(r, 50));
}

/**
 * Starts the embedded server and keeps it running: if it dies while the platform runs, it is
 * started again on the same ports and data, and its in-flight invocations resume. A server of a
 * previous platform still running on this data (shutting down after its platform was killed, or
 * left running where it could not be bound to it) is ended first: this one's own is bound to
 * this process and ends with it.
 */
async function embeddedRestate(dataDir: string, ports: PortPlan, identityKeyFile: string, log: Logger, stopRequested?: AbortSignal) {
  const pidFile = path.join(dataDir, 'restate.pid');
  const ingressUrl = `http://127.0.0.1:${ports.restateIngress}`;
  const adminUrl = `http://127.0.0.1:${ports.restateAdmin}`;
  const launch = async () => {
    const server = await startRestateServer({
      baseDir: path.join(dataDir, 'restate'),
      ingressPort: ports.restateIngress,
      adminPort: ports.restateAdmin,
      nodePort: ports.restateNode,
      logFile: path.join(dataDir, 'restate.log'),
      requestIdentityKeyFile: identityKeyFile,
    });
    fs.writeFileSync(pidFile, String(server.pid));
    log.info('embedded Restate started', { ms: server.startedInMs });
    return { pid: server.pid, stop: () => server.stop() };
  };

  const oldPid = Number(fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8') : NaN);
  if (Number.isInteger(oldPid) && pidAlive(oldPid)) {
    log.warn('ending the embedded Restate server of a previous platform, to start this one\'s own', { pid: oldPid });
    await endRestate(oldPid);
  }
  let current: { pid: number; stop: () => Promise<void> } = await launch();

  let stopping = false;
  let restarting = false;
  const watchdog = setInterval(() => {
    if (stopping || restarting || stopRequested?.aborted || pidAlive(current.pid)) return;
    restarting = true;
    log.warn('the embedded Restate server exited; starting it again', { pid: current.pid });
    launch()
      .then((next) => (current = next))
      .catch((err) => log.error('restarting the embedded Restate server failed', { error: String(err) }))
      .finally(() => (restarting = false));
  }, 500);
  watchdog.unref();

  return {
    ingressUrl,
    adminUrl,
    async stop() {
      stopping = true;
      clearInterval(watchdog);
      // a restart under way would leave its new server behind
      while (restarting) await new Promise((r) => setTimeout(r, 50));
      await current.stop();
      fs.rmSync(pidFile, { force: true });
    },
  };
}

/**
 * Binds the workflow endpoint. A port this start chose itself was only free when it was checked:
 * if another process bound it since, another is chosen (Restate has not been told of it yet). A
 * configured port, or one kept from an earlier start, stays: in-flight invocations are pinned to it.
 */
export async function listenOnWorkerPort<T>(opts: EngineOptions, listen: (port: number) => Promise<T>): Promise<T> {
  const { config, ports, dataDir, deps, log } = opts;
  if (config.WORKER_PORT !== undefined) return listen(config.WORKER_PORT);
  for (let attempt = 1; ; attempt++) {
    try {
      return await listen(ports.worker);
    } catch (err) {
      const taken = (err as NodeJS.ErrnoException).code === 'EADDRINUSE';
      if (!taken || attempt >= 5 || !ports.chosenNow.includes('worker')) throw err;
      const taker = ports.worker;
      const port = await choosePortAgain(dataDir, ports, 'worker');
      deps.platformEndpoints?.push({ host: '127.0.0.1', port });
      log.warn('the workflow endpoint port chosen at start was taken meanwhile; another was chosen', { taken: taker, port });
    }
  }
}

/**
 * Whether this worker serves the fleet's workflows (the run workflow, schedules, modules' services):
 * yes unless they are registered at another worker's endpoint and that worker is alive. The engine
 * pins an invocation to the deployment it began on, so a worker joining a fleet serves only its own
 * sandbox host: losing it then touches no other worker's runs.
 */
async function servesWorkflows(adminUrl: string, pool: AppDeps['database']['pool'], workerId: string, fleet: FleetSettings): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await restateFetch(adminUrl, `/services/${RUN_WORKFLOW_NAME}`, { signal: AbortSignal.timeout(5_000) });
      if (res.status === 404) return true;
      if (!res.ok) throw new Error(`the engine's admin API answered ${res.status}`);
      const { deployment_id: deploymentId } = (await res.json()) as { deployment_id?: string };
      if (!deploymentId) return true;
      const dep = await restateFetch(adminUrl, `/deployments/${encodeURIComponent(deploymentId)}`, { signal: AbortSignal.timeout(5_000) });
      if (!dep.ok) return true;
      const { uri } = (await dep.json()) as { uri?: string };
      if (!uri) return true;
      const owner = await liveWorkerAt(pool, uri, fleet);
      return owner === null || owner === workerId;
    } catch (err) {
      // the admin API of an external engine may still be starting
      if (attempt >= 50) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

export async function startEngine(opts: EngineOptions): Promise<Engine> {
  const { config, dataDir, ports, deps, log, signalKey, stopping } = opts;
  const stops: Array<() => Promise<void>> = [];
  try {
    let ingressUrl = config.RESTATE_INGRESS_URL;
    let adminUrl = config.RESTATE_ADMIN_URL;
    // The key Restate signs its calls to the workflow endpoint with: generated for the embedded
    // server, given (the same file as the server's) for an external one.
    let identityKeyFile = config.RESTATE_REQUEST_IDENTITY_KEY_FILE;
    if (!ingressUrl || !adminUrl) {
      if (!identityKeyFile) {
        identityKeyFile = path.join(dataDir, 'restate-identity.pem');
        ensureRequestIdentityKey(identityKeyFile);
      }
      const server = await embeddedRestate(dataDir, ports, identityKeyFile, log, stopping);
      stops.push(() => server.stop());
      ingressUrl = server.ingressUrl;
      adminUrl = server.adminUrl;
    }
    const runs = createRunWorkflowClient(ingressUrl, { signalKey });

    if (config.ROLE !== 'api') {
      const adapter = await createSandboxAdapter(deps, dataDir);
      stops.push(() => adapter.close());
      const pool = deps.database.pool;
      const workerId = workerIdFor(dataDir, config.WORKER_ID);
      // One indexed read per pass, and only while sandboxes run: cheap enough to follow the sweep closely.
      const reaper = startSandboxReaper(pool, adapter, Math.min(config.RUN_RECONCILE_SECONDS, REAP_MAX_SECONDS), log, workerId);
      stops.push(() => reaper.stop());
      const fleet: FleetSettings = { heartbeatSeconds: config.WORKER_HEARTBEAT_SECONDS, lostHeartbeats: config.WORKER_LOST_HEARTBEATS };
      const activities = runActivitiesFor(deps, adapter, workerId);
      // this worker's own sandbox host: the engine routes its calls here alone
      const host = createSandboxHostService(workerId, activities, (runId) => placedOn(pool, runId, workerId));
      const home = await servesWorkflows(adminUrl, pool, workerId, fleet);
      const definitions = home
        ? [...buildWorkflowServices(activities, { signalKey, schedules: scheduleActivitiesFor(deps), extra: opts.moduleServices, fleet: fleetActivities(pool, workerId, fleet) }).definitions, host]
        : [host];
      const endpoint = await listenOnWorkerPort(opts, (p) => startWorkflowEndpoint({
        port: p, host: config.WORKER_HOST, services: definitions, logger: restateLogTransport(log), identityKeys: identityKeys(identityKeyFile),
      }));
      stops.push(() => endpoint.close());
      const endpointUrl = config.WORKER_ENDPOINT_URL ?? endpoint.url;
      try {
        await registerDeployment(adminUrl, endpointUrl);
      } catch (err) {
        // Same address, changed services (an upgrade of the embedded default): replace it.
        if (!(err instanceof RestateAdminError && err.status === 409)) throw err;
        log.warn('workflow services changed at the same address; re-registering with force');
        await registerDeployment(adminUrl, endpointUrl, { force: true });
      }
      // in the fleet once its service is registered: from now on runs may be placed here
      await joinFleet(pool, workerId, endpointUrl);
      log.info(home ? 'worker joined the fleet, serving its workflows' : 'worker joined the fleet as a sandbox host', { worker_id: workerId, endpoint: endpointUrl });
      const heartbeat = runEvery(fleet.heartbeatSeconds * 1000, () => beat(pool, workerId), (err) => log.warn('worker heartbeat failed', { error: String(err) }));
      stops.push(() => heartbeat.stop());
      // SIGUSR2 drains: no new runs are placed here, the ones in flight go on to their end
      let drained: ReturnType<typeof runEvery> | null = null;
      const drain = () => {
        if (drained) return;
        log.info('draining: this worker takes no new runs', { worker_id: workerId });
        let told = false;
        drained = runEvery(fleet.heartbeatSeconds * 1000, async () => {
          await setDraining(pool, workerId, true);
          const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE worker_id = $1 AND status IN ('pending', 'running')`, [workerId]);
          if (rows[0]?.n === 0 && !told) log.info('drained: no runs in flight on this worker; it can be stopped', { worker_id: workerId });
          told = rows[0]?.n === 0;
        }, (err) => log.warn('draining failed; tried again', { error: String(err) }));
        setDraining(pool, workerId, true).catch((err) => log.warn('draining failed; tried again', { error: String(err) }));
      };
      process.on('SIGUSR2', drain);
      stops.push(async () => {
        process.off('SIGUSR2', drain);
        await drained?.stop();
      });
    }
    return {
      ingressUrl,
      adminUrl,
      runs,
      async stop() {
        for (const s of stops.reverse()) await s().catch((e) => log.warn('engine stop step failed', { error: String(e) }));
      },
    };
  } catch (err) {
    for (const s of stops.reverse()) await s().catch(() => {});
    throw err;
  }
}
