// Every setting the platform reads, in one zod schema. Boot fails with a message naming the
// setting (and the key, for JSON settings) when a value is wrong.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { isTrustRootEntry } from './afps/bundle-signature.ts';
import { parseHostPort } from './egress.ts';
import { isRestateAddressList } from './restate-failover.ts';

const MODULE_NAMES = ['oidc', 'webhooks', 'mcp', 'core-providers', 'chat', 'firecracker', 'codex', 'claude-code', 'observability', 'ee'] as const;
export const DEFAULT_MODULES = ['oidc', 'webhooks', 'mcp', 'core-providers', 'chat'] as const;
export type ModuleName = (typeof MODULE_NAMES)[number];

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();

export const PlatformRunLimits = z
  .object({
    timeout_ceiling_seconds: positiveInt.default(1800),
    per_org_global_rate_per_min: positiveInt.default(200),
    max_concurrent_per_org: positiveInt.default(50),
    agent_memory_ceiling_mb: positiveInt.default(1536),
    agent_cpu_ceiling: z.number().positive().default(2),
  })
  .strict();

export const InlineRunLimits = z
  .object({
    rate_per_min: positiveInt.default(60),
    manifest_bytes: positiveInt.default(65536),
    prompt_bytes: positiveInt.default(200000),
    max_skills: nonNegativeInt.default(20),
    retention_days: positiveInt.default(30),
  })
  .strict();

const MIB = 1024 * 1024;
export const LlmProxyLimits = z
  .object({ rate_per_min: positiveInt.default(60), max_request_bytes: positiveInt.default(10 * MIB) })
  .strict();

export const CredentialProxyLimits = z
  .object({
    rate_per_min: positiveInt.default(100),
    max_request_bytes: positiveInt.default(10 * MIB),
    max_response_bytes: positiveInt.default(50 * MIB),
    session_ttl_seconds: positiveInt.default(3600),
  })
  .strict();

/** An empty variable counts as unset (OpenTelemetry's rule for its variables). */
function unsetWhenEmpty<T extends z.ZodTypeAny>(schema: T) {
  return z.preprocess((v) => (v === '' ? undefined : v), schema);
}

/** `key=value,key2=value2` with percent-encoded values (W3C Baggage's form, used by OTEL_* lists). */
const keyValueList = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    const out: Record<string, string> = {};
    for (const item of (raw ?? '').split(',')) {
      if (item.trim() === '') continue;
      const at = item.indexOf('=');
      const key = at > 0 ? item.slice(0, at).trim() : '';
      if (!key) {
        ctx.addIssue({ code: 'custom', message: 'must be key=value pairs separated by commas' });
        return z.NEVER;
      }
      try {
        out[key] = decodeURIComponent(item.slice(at + 1).trim());
      } catch {
        ctx.addIssue({ code: 'custom', message: `the value of ${key} is not valid percent-encoding` });
        return z.NEVER;
      }
    }
    return out;
  });

/** A JSON-valued setting: empty or unset means the defaults; unknown keys fail boot. */
function jsonSetting<T extends z.ZodTypeAny>(schema: T) {
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw.trim() === '') return {};
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'is not valid JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema);
}

const intFromEnv = (def: number) => z.coerce.number().int().nonnegative().default(def);
const optionalIntFromEnv = z.coerce.number().int().positive().optional();
const csv = z
  .string()
  .optional()
  .transform((s) => (s ? s.split(',').map((x) => x.trim()).filter(Boolean) : []));

export const ConfigSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  ROLE: z.enum(['all', 'api', 'worker']).default('all'),
  PORT: intFromEnv(3000),
  HOST: z.string().default('127.0.0.1'),
  PUBLIC_URL: z.string().url().optional(),
  /** outgoing mail (invitations, password resets): smtp://user:pass@host:port or smtps://...; unset: mail is disabled */
  SMTP_URL: z
    .string()
    .optional()
    .refine((u) => u === undefined || u === '' || /^smtps?:\/\/[^/]/.test(u), 'must be an smtp:// or smtps:// URL'),
  /** the From address of the platform's mail; required with SMTP_URL */
  MAIL_FROM: z.string().min(3).optional(),
  /** how long sending one message may take (connect, greeting and each exchange) before it counts as failed */
  SMTP_TIMEOUT_MS: z.coerce.number().int().positive().default(10000),
  DATA_DIR: z.string().default('.data'),
  DATABASE_URL: z.string().optional(),
  REDIS_URL: z.string().optional(),
  /**
   * An external Restate's ingress: one URL, or a cluster's nodes as a comma-separated list, tried
   * in order when a node cannot be reached (with RESTATE_ADMIN_URL; unset: an embedded server)
   */
  RESTATE_INGRESS_URL: z.string().refine(isRestateAddressList, 'must be a URL or a comma-separated list of URLs').optional(),
  /** an external Restate's admin API: one URL, or a cluster's nodes as a comma-separated list, like RESTATE_INGRESS_URL */
  RESTATE_ADMIN_URL: z.string().refine(isRestateAddressList, 'must be a URL or a comma-separated list of URLs').optional(),
  /** where the Restate server reaches this process's workflow endpoint (external Restate) */
  WORKER_ENDPOINT_URL: z.string().url().optional(),
  /**
   * Ed25519 private key (PKCS#8 PEM file) Restate signs its requests to the workflow endpoint with;
   * the endpoint refuses unsigned ones. Embedded Restate: generated in DATA_DIR when unset.
   */
  RESTATE_REQUEST_IDENTITY_KEY_FILE: z.string().min(1).optional(),
  WORKER_PORT: optionalIntFromEnv,
  /**
   * this worker's name in the fleet (letters, digits; at most 32): its sandbox host service is
   * `sandboxHost_<id>`. Unset: generated once and kept in DATA_DIR/worker-id.
   */
  WORKER_ID: z.string().regex(/^[A-Za-z0-9]{1,32}$/).optional(),
  /** seconds between a worker's heartbeats in the fleet's database */
  WORKER_HEARTBEAT_SECONDS: z.coerce.number().int().positive().max(300).default(5),
  /** heartbeats a worker may miss before it counts as lost: its unstarted runs boot elsewhere, its running runs end sandbox_lost */
  WORKER_LOST_HEARTBEATS: z.coerce.number().int().min(2).max(100).default(3),
  /** where the workflow endpoint listens; only Restate should reach it (a container deployment: its network) */
  WORKER_HOST: z.string().min(1).default('127.0.0.1'),
  ENCRYPTION_KEY: z
    .string()
    .optional()
    .refine((k) => k === undefined || Buffer.from(k, 'base64').length === 32, 'must be 32 bytes, base64'),
  BOOTSTRAP_TOKEN: z.string().min(16).optional(),
  BOOTSTRAP_OWNER_EMAIL: z.string().email().optional(),
  ERROR_TYPE_BASE: z.string().url().default('https://errors.agent-platform.dev'),
  SESSION_COOKIE_PREFIX: z.string().regex(/^[a-z0-9_-]+$/i).default('agent_platform'),
  MODULES: z
    .string()
    .optional()
    .transform((s, ctx) => {
      if (s === undefined || s.trim() === '') return [...DEFAULT_MODULES] as ModuleName[];
      const names = s.split(',').map((x) => x.trim()).filter(Boolean);
      for (const n of names) {
        if (!(MODULE_NAMES as readonly string[]).includes(n)) {
          ctx.addIssue({ code: 'custom', message: `unknown module "${n}" (known: ${MODULE_NAMES.join(', ')})` });
        }
      }
      return names as ModuleName[];
    }),
  RUN_ADAPTER: z.enum(['process', 'docker', 'firecracker']).default('process'),
  PLATFORM_RUN_LIMITS: jsonSetting(PlatformRunLimits),
  INLINE_RUN_LIMITS: jsonSetting(InlineRunLimits),
  LLM_PROXY_LIMITS: jsonSetting(LlmProxyLimits),
  CREDENTIAL_PROXY_LIMITS: jsonSetting(CredentialProxyLimits),
  API_BODY_LIMIT_BYTES: intFromEnv(10 * MIB),
  FILE_MAX_BYTES: intFromEnv(100 * MIB),
  ORG_STORAGE_QUOTA_BYTES: optionalIntFromEnv,
  RUN_MAX_FILES: intFromEnv(100),
  UPLOAD_MAX_ACTIVE_PER_ACTOR: intFromEnv(20),
  /** seconds a staged upload waits for its content before it expires (410 upload_expired) */
  UPLOAD_TTL_SECONDS: z.coerce.number().int().positive().default(3600),
  /** days a durable file is kept unless kept with POST /api/files/{id}/keep; 0 keeps every file */
  FILE_RETENTION_DAYS: z.coerce.number().int().nonnegative().default(30),
  /** seconds a preview link (GET /preview/files/{id}) stays valid */
  FILE_PREVIEW_TTL_SECONDS: z.coerce.number().int().positive().default(300),
  /** where file content lives: local (DATA_DIR/files) or an S3-compatible bucket */
  FILE_STORAGE: z.enum(['local', 's3']).default('local'),
  S3_ENDPOINT: z.string().url().optional(),
  S3_BUCKET: z.string().min(1).optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  S3_FORCE_PATH_STYLE: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
  TRUSTED_ORIGINS: csv,
  /** false, true, a hop count, or a comma list of trusted proxy addresses/subnets (Express semantics) */
  TRUST_PROXY: z.string().default('false'),
  /** host:port entries ([v6]:port for IPv6): a bare host would open every port of an internal machine */
  EGRESS_ALLOW_INTERNAL_HOSTS: csv.superRefine((entries, ctx) => {
    for (const entry of entries) {
      if (parseHostPort(entry) === null) ctx.addIssue({ code: 'custom', message: `"${entry}" must be host:port (an IPv6 address as [address]:port)` });
    }
  }),
  /** a PEM file of certificate authorities the sidecars trust beside the system's (checked at start) */
  SANDBOX_EGRESS_CA_FILE: z.string().min(1).optional().superRefine((file, ctx) => {
    if (file === undefined) return;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return ctx.addIssue({ code: 'custom', message: `${file} cannot be read` });
    }
    if (!/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.test(text)) ctx.addIssue({ code: 'custom', message: `${file} holds no PEM certificate` });
  }),
  AFPS_SIGNATURE_POLICY: z.enum(['off', 'warn', 'required']).default('warn'),
  AFPS_TRUST_ROOT: csv.refine((entries) => entries.every(isTrustRootEntry), 'each entry must be the standard base64 of a raw 32-byte Ed25519 public key'),
  AFPS_SIGNING_KEY: z.string().optional(),
  /** GET /api/models/openrouter reads this catalog (GET {base}/models, no key); a mirror or stand-in may replace it */
  OPENROUTER_BASE_URL: z.string().url().default('https://openrouter.ai/api/v1'),
  /** deadline of one catalog read; past it the search answers 504 timeout */
  OPENROUTER_TIMEOUT_MS: z.coerce.number().int().positive().default(10000),
  /** seconds a model-provider pairing token stays redeemable (POST /api/model-provider-pairings) */
  MODEL_PAIRING_TTL_SECONDS: z.coerce.number().int().positive().max(3600).default(600),
  /** repository imports read this host's REST API (git trees and blobs); GitHub Enterprise: https://<host>/api/v3 */
  GITHUB_API_URL: z.string().url().default('https://api.github.com'),
  /** package draft editing: one file, and the whole tree (413 file_too_large / tree_too_large) */
  PACKAGE_EDIT_MAX_FILE_BYTES: intFromEnv(5 * MIB),
  PACKAGE_EDIT_MAX_TREE_BYTES: intFromEnv(50 * MIB),
  /** what one imported package (an archive, or one package of a bundle) may inflate to; 422 past it */
  PACKAGE_MAX_INFLATED_BYTES: intFromEnv(200 * MIB),
  AUTH_ALLOWED_SIGNUP_DOMAINS: csv,
  /** required: a password sign-in is refused until the address is verified (needs SMTP_URL); optional (default): verification is offered, not enforced */
  AUTH_EMAIL_VERIFICATION: z.enum(['required', 'optional']).default('optional'),
  /** sign-in links by e-mail (sent only when mail is enabled); seconds a link stays valid */
  AUTH_MAGIC_LINKS: z.enum(['enabled', 'disabled']).default('enabled'),
  AUTH_MAGIC_LINK_TTL_SECONDS: z.coerce.number().int().positive().max(3600).default(600),
  /** social sign-in through one OpenID Connect provider: its issuer URL, this platform's client there, and the name shown to users */
  AUTH_SOCIAL_ISSUER_URL: z.string().url().optional(),
  AUTH_SOCIAL_CLIENT_ID: z.string().min(1).optional(),
  AUTH_SOCIAL_CLIENT_SECRET: z.string().min(1).optional(),
  AUTH_SOCIAL_NAME: z.string().trim().min(1).max(100).default('OpenID Connect'),
  ORG_CREATION_DISABLED: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
  SANDBOX_WARM_POOL: intFromEnv(2),
  /** RUN_ADAPTER=docker: the sidecar and agent images (set both, or neither: then built from this checkout) */
  DOCKER_SIDECAR_IMAGE: z.string().min(1).optional(),
  DOCKER_AGENT_IMAGE: z.string().min(1).optional(),
  /**
   * RUN_ADAPTER=docker: the images a local integration (source.kind local with command) may name;
   * unset: the agent image only. A tenant's manifest chooses the image, so only these ever run.
   */
  LOCAL_INTEGRATION_IMAGES: csv,
  /** RUN_ADAPTER=docker: the Engine API's unix socket */
  DOCKER_SOCKET: z.string().min(1).default('/var/run/docker.sock'),
  /**
   * true gives the agent its shell tool on a process sandbox that is not confined (no bubblewrap):
   * its commands then run as the platform's user, with the host's files and network. Unsafe.
   */
  SANDBOX_UNCONFINED_SHELL_UNSAFE: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
  /**
   * RUN_ADAPTER=process: 'required' refuses to start where agents cannot be confined with
   * bubblewrap; 'auto' runs them unconfined there, with a warning at start and on readiness.
   */
  SANDBOX_CONFINEMENT: z.enum(['auto', 'required']).default('auto'),
  /** seconds a sandbox has to send its first event */
  RUN_BOOT_SECONDS: z.coerce.number().int().positive().default(60),
  /** seconds between a runner's heartbeats; a run silent for three of them is failed */
  RUN_HEARTBEAT_SECONDS: z.coerce.number().int().positive().default(5),
  /**
   * seconds a run waits for a person's approval while holding its sandbox; past them the run is
   * parked: its state is checkpointed, its sandbox stopped, and a fresh one continues it on the decision
   */
  RUN_PARK_AFTER_SECONDS: z.coerce.number().int().positive().default(60),
  /** seconds between sweeps for runs whose workflow is gone from the engine and sandboxes whose run ended */
  RUN_RECONCILE_SECONDS: z.coerce.number().int().positive().default(60),
  /** days a run's logs are kept (facts pinned to memory excepted); 0 keeps them */
  RUN_LOG_RETENTION_DAYS: z.coerce.number().int().nonnegative().default(90),
  /**
   * webhook retries: the pause before each retry, in seconds (decimals allowed), each drawn within
   * +-20 % (jitter); the default spans about 40 hours (at least 31 with the jitter), then the delivery fails
   */
  WEBHOOK_RETRY_SCHEDULE_SECONDS: z
    .string()
    .default('5,30,120,600,1800,3600,7200,14400,28800,43200,43200')
    .transform((s, ctx) => {
      const delays = s.split(',').map((x) => x.trim()).filter(Boolean).map(Number);
      if (delays.length === 0 || delays.some((d) => !Number.isFinite(d) || d <= 0)) {
        ctx.addIssue({ code: 'custom', message: 'must be a comma list of positive numbers of seconds' });
      }
      return delays;
    }),
  /** seconds a webhook receiver has to answer one delivery attempt */
  WEBHOOK_TIMEOUT_SECONDS: z.coerce.number().positive().max(60).default(10),
  /** oidc module: dynamic client registrations (RFC 7591) one client IP may make per minute */
  OAUTH_REGISTRATIONS_PER_MINUTE: z.coerce.number().int().positive().max(10_000).default(10),
  /** oidc module: seconds a fetched client ID metadata document is trusted before it is fetched again */
  OAUTH_CLIENT_METADATA_TTL_SECONDS: z.coerce.number().int().positive().max(7 * 86_400).default(3600),
  /** where sandboxes reach this platform's runner routes; default http://HOST:PORT */
  INTERNAL_API_URL: z.string().url().optional(),
  SHUTDOWN_DRAIN_SECONDS: intFromEnv(25),
  /** seconds without another frame after which a realtime stream gets a ping (spec: 30) */
  REALTIME_PING_SECONDS: z.coerce.number().positive().max(3600).default(30),
  /** chat module: sessions whose turn may stream at once in this process (beyond: 429 chat_capacity) */
  CHAT_MAX_LIVE_SESSIONS: z.coerce.number().int().positive().default(100),
  /** chat module: turns one member may post per minute */
  CHAT_TURN_RATE_PER_MIN: z.coerce.number().int().positive().default(20),
  /** chat module: skills a space may enforce in every chat (beyond: 409 enforced_skills_limit) */
  CHAT_ENFORCED_SKILLS_MAX: z.coerce.number().int().positive().default(5),
  /** chat module: bytes of SKILL.md all enforced skills may add to a chat together (beyond: 409 enforced_skills_budget) */
  CHAT_ENFORCED_SKILLS_BUDGET_BYTES: z.coerce.number().int().positive().default(32 * 1024),
  /** chat module: model calls one turn may make (each tool round is one) */
  CHAT_MAX_MODEL_CALLS_PER_TURN: z.coerce.number().int().positive().max(50).default(8),
  /** the operator's metrics listener (GET /metrics, Prometheus text, no authentication); unset: no listener */
  METRICS_PORT: optionalIntFromEnv,
  /** where the metrics listener binds: loopback unless the operator opens it to a scraper's network */
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** OTLP/HTTP receiver of metrics only, used as given (overrides OTEL_EXPORTER_OTLP_ENDPOINT for metrics) */
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: z.string().url().optional(),
  /** the OpenTelemetry exporter list: metrics go over OTLP only when it names otlp (none: not); the listener stays as METRICS_PORT says */
  OTEL_METRICS_EXPORTER: csv.transform((names) => (names.length ? names : ['otlp'])),
  /** milliseconds between two OTLP exports of metrics */
  OTEL_METRIC_EXPORT_INTERVAL: z.coerce.number().int().min(1000).default(60_000),
  // Tracing (lib/tracing): the standard OpenTelemetry variables. Without an endpoint nothing is loaded.
  /** the collector's base URL (/v1/traces and /v1/metrics are added); trusted operator configuration, not a tenant's */
  OTEL_EXPORTER_OTLP_ENDPOINT: unsetWhenEmpty(z.string().url().optional()),
  /** the traces URL as given, over OTEL_EXPORTER_OTLP_ENDPOINT */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: unsetWhenEmpty(z.string().url().optional()),
  OTEL_EXPORTER_OTLP_PROTOCOL: unsetWhenEmpty(z.enum(['http/protobuf', 'http/json']).default('http/protobuf')),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: unsetWhenEmpty(z.enum(['http/protobuf', 'http/json']).optional()),
  /** key=value pairs sent to the collector (its credentials, say); never logged */
  OTEL_EXPORTER_OTLP_HEADERS: keyValueList,
  OTEL_SERVICE_NAME: unsetWhenEmpty(z.string().default('agent-platform')),
  OTEL_RESOURCE_ATTRIBUTES: keyValueList,
  OTEL_TRACES_SAMPLER: unsetWhenEmpty(z.enum(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio']).default('parentbased_always_on')),
  OTEL_TRACES_SAMPLER_ARG: unsetWhenEmpty(z.string().optional()),
  /** milliseconds spans wait to be sent together */
  OTEL_BSP_SCHEDULE_DELAY: unsetWhenEmpty(z.coerce.number().int().positive().default(5000)),
  /** prompts and completions on model spans only when true */
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: unsetWhenEmpty(z.enum(['true', 'false']).default('false')).transform((v) => v === 'true'),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
});

export type Config = z.infer<typeof ConfigSchema>;

/** Settings that only make sense together. */
const CheckedConfigSchema = ConfigSchema.superRefine((c, ctx) => {
  if (c.FILE_STORAGE === 's3' && !c.S3_BUCKET) ctx.addIssue({ code: 'custom', path: ['S3_BUCKET'], message: 'is required when FILE_STORAGE is s3' });
  if (c.AUTH_EMAIL_VERIFICATION === 'required' && !c.SMTP_URL) ctx.addIssue({ code: 'custom', path: ['AUTH_EMAIL_VERIFICATION'], message: 'required needs SMTP_URL (the links are e-mailed)' });
  if (c.NODE_ENV === 'production' && c.AUTH_SOCIAL_ISSUER_URL?.startsWith('http:')) ctx.addIssue({ code: 'custom', path: ['AUTH_SOCIAL_ISSUER_URL'], message: 'must be https in production' });
  const social = [c.AUTH_SOCIAL_ISSUER_URL, c.AUTH_SOCIAL_CLIENT_ID, c.AUTH_SOCIAL_CLIENT_SECRET];
  if (social.some(Boolean) && !social.every(Boolean)) {
    ctx.addIssue({ code: 'custom', path: ['AUTH_SOCIAL_ISSUER_URL'], message: 'AUTH_SOCIAL_ISSUER_URL, AUTH_SOCIAL_CLIENT_ID and AUTH_SOCIAL_CLIENT_SECRET go together' });
  }
});

export class ConfigError extends Error {}

/** Parses the environment; throws ConfigError with one line per bad setting. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = CheckedConfigSchema.safeParse(env);
  if (result.success) {
    if (result.data.SMTP_URL && !result.data.MAIL_FROM) throw new ConfigError('Invalid configuration:\n  MAIL_FROM: required when SMTP_URL is set');
    return result.data;
  }
  const lines = result.error.issues.map((issue) => {
    const [setting, ...rest] = issue.path.map(String);
    const key = rest.length ? ` key "${rest.join('.')}"` : '';
    const message = issue.code === 'unrecognized_keys' ? `unknown key(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}` : issue.message;
    return `${setting}${key}: ${message}`;
  });
  throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
}
