// The execution backend behind RUN_ADAPTER. A sandbox is one run's agent runtime and sidecar,
// never reused. Adapters hold no engine types: the run workflow calls them through activities.
import type { Readable } from 'node:stream';
import type { PlatformEndpoint } from '../../lib/egress.ts';
import type { OutboundProxy } from '../../lib/proxy-tunnel.ts';

export type { IntegrationAssignment, LocalIntegrationAssignment, LocalServerSpec } from '../../lib/afps/integration-assignment.ts';
import type { IntegrationAssignment, LocalIntegrationAssignment, LocalServerSpec } from '../../lib/afps/integration-assignment.ts';

/** A file of the run's workspace: held in memory, or streamed from where it lives as it is written. */
export type WorkspaceFile = HeldWorkspaceFile | StreamedWorkspaceFile;

export interface HeldWorkspaceFile {
  /** relative path inside the workspace: prompt.md, input.json, skills/<id>/SKILL.md ... */
  path: string;
  content: Buffer;
}

/** An input file (up to FILE_MAX_BYTES): opened when the workspace is written, never held whole. */
export interface StreamedWorkspaceFile {
  path: string;
  open(): Promise<Readable>;
}

/** What the sidecar needs to serve one run (see sidecar/assignment.ts); the adapter adds its token. */
export interface SidecarAssignment {
  runId: string;
  eventsUrl: string;
  eventSecret: string;
  /** proxy: the organization's default outbound proxy, through which the sidecar calls the model */
  /** defaults: the run's model settings (else the model's); accepts: what the model takes, checked on every call */
  model: {
    baseUrl: string; apiKey: string; model: string; proxy?: OutboundProxy | null;
    defaults?: { temperature: number | null; reasoningEffort: string | null };
    accepts?: { supportsTemperature: boolean; reasoningLevels: string[] };
  } | null;
  outputSchema: Record<string, unknown> | null;
  runtimeTools: string[];
  heartbeatSeconds: number;
  historyUrl?: string;
  memoryUrl?: string;
  /** where publish_file posts a file (signed like the events): it becomes a durable file of the run */
  publishUrl?: string;
  /** where the sidecar posts the agent's checkpoint after each completed step, and reads the one a resumed run starts from (signed like the events) */
  checkpointUrl?: string;
  /** the run continues from another run's checkpoint: its agent asks for it at the start */
  resumes?: boolean;
  /** the sequence of the sidecar's first event: a run woken from its park goes on from its last */
  firstSequence?: number;
  /** base of the run's connection routes: the sidecar asks there for a refreshed OAuth credential */
  connectionsUrl?: string;
  /** where the sidecar asks for a person's approval of a tool call and reads the decision (signed like the events) */
  approvalsUrl?: string;
  /** the tool calls that wait for a person's approval, and how long a request waits */
  approvals?: { tools: string[]; timeoutSeconds: number } | null;
  /** host:port entries the model provider may be at although they resolve to internal addresses */
  egressAllowInternalHosts?: string[];
  /** the platform's own endpoints, never a model provider */
  egressPlatformEndpoints?: PlatformEndpoint[];
  /** certificate authorities (PEM) the sidecar trusts beside the system's (SANDBOX_EGRESS_CA_FILE) */
  egressExtraCa?: string;
  integrations?: IntegrationAssignment[];
  /** the local integrations' servers, which the adapter starts (it adds each one's bridge) */
  localIntegrations?: LocalIntegrationAssignment[];
  /** the organization's default outbound proxy: the sidecar's integration calls go through it */
  proxy?: OutboundProxy | null;
  /** model usage limits the sidecar enforces (db/budgets.ts runBudgetAtBoot); absent: none */
  budget?: { run: SpendLimit | null; org: SpendLimit | null };
  /** the run's trace context: the sidecar records its spans under it and sends them with its events */
  trace?: SidecarTrace;
}

export interface SidecarTrace {
  traceparent: string;
  /** prompts and completions on model spans (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) */
  captureMessageContent: boolean;
  /** gen_ai.provider.name of the run's model */
  provider?: string;
  /** gen_ai.agent.name */
  agentName?: string;
}

/** Tokens (prompt + completion) and USD a run may still spend; null: no limit. */
export interface SpendLimit {
  maxTokens: number | null;
  maxCostUsd: number | null;
}

export interface SandboxSpec {
  runId: string;
  workspace: WorkspaceFile[];
  sidecar: SidecarAssignment;
  limits: { memoryMb: number; cpus: number };
  /** local integrations' servers: only a container or microVM backend starts them */
  localServers?: LocalServerSpec[];
}

/**
 * running: both programs run. ending: the runner has handed its end to the sidecar, which is
 * still there delivering it (the agent may have exited). gone: anything else.
 */
export type SandboxState = 'running' | 'ending' | 'gone';

export interface SandboxAdapter {
  readonly kind: 'process' | 'docker' | 'firecracker';
  /** starts the run's sandbox; answers once the agent has its assignment */
  start(spec: SandboxSpec): Promise<{ sandboxId: string }>;
  /** false when the sandbox is unknown to this process or its programs have exited */
  alive(sandboxId: string): Promise<boolean>;
  /** what liveness judges by; 'gone' for an unknown sandbox */
  state(sandboxId: string): Promise<SandboxState>;
  /** the sandboxes this process runs, with their run (for the reaper) */
  sandboxes(): Array<{ sandboxId: string; runId: string }>;
  /** stops the programs and removes the workspace; safe to call twice or for an unknown id */
  stop(sandboxId: string): Promise<void>;
  /** stops every sandbox and the warm pool */
  close(): Promise<void>;
}
