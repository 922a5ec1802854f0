// What the API needs from the process that hosts it, built once at start-up.
import type { CacheStore } from '../lib/cache/store.ts';
import type { Config } from '../lib/config.ts';
import type { PlatformEndpoint } from '../lib/egress.ts';
import type { SecretBox } from '../lib/crypto.ts';
import type { Database } from '../db/client.ts';
import type { Logger } from '../lib/log.ts';
import type { RunWorkflowClient } from '../workflows/run-client.ts';
import type { RunReadCache } from './services/runs/read-cache.ts';
import type { RunStatusFeed } from './services/runs/status-feed.ts';
import type { RunSubmitter } from './services/runs/submitter.ts';
import type { Lifecycle } from './lifecycle.ts';
import type { AuthCache } from './services/auth-cache.ts';
import type { ScheduleArmer } from './services/schedules/service.ts';
import type { RealtimeHub } from './services/realtime/hub.ts';

export interface AppDeps {
  config: Config;
  log: Logger;
  database: Database;
  cache: CacheStore;
  secrets: SecretBox;
  lifecycle: Lifecycle;
  authCache: AuthCache;
  /** the token that redeems the first-run bootstrap */
  bootstrapToken: string;
  /** the run workflow through the engine's ingress; set once the engine is reachable */
  runs?: RunWorkflowClient;
  /** hands admitted runs to the engine; absent when no engine is reachable */
  submitter?: RunSubmitter;
  /** re-arms a schedule's virtual object after a change; absent when no engine is reachable */
  schedules?: ScheduleArmer;
  /** committed run status changes, for long polls and streams */
  runFeed?: RunStatusFeed;
  /** run reads served until a change is heard (built on runFeed) */
  runReads?: RunReadCache;
  /** the realtime streams of this process (Server-Sent Events) */
  realtime?: RealtimeHub;
  /** the platform's own host:ports, refused by the egress guard whatever the allowlist says */
  platformEndpoints?: PlatformEndpoint[];
}
