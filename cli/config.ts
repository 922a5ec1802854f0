// The CLI's saved state, one JSON file in the user's configuration directory
// ($XDG_CONFIG_HOME/agent-platform/config.json, else ~/.config/agent-platform/config.json), readable
// by its owner only (0600; the folder 0700): the current instance, and per instance the default
// organization and space and the tokens of `login`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Tokens {
  access_token: string;
  refresh_token?: string;
  id_token?: string;
  /** epoch milliseconds */
  expires_at: number;
  scope?: string;
}

export interface InstanceState {
  org?: string;
  space?: string;
  tokens?: Tokens;
}

export interface Config {
  /** the instance commands use when neither --url nor AGENT_PLATFORM_URL names one */
  url?: string;
  instances: Record<string, InstanceState>;
}

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config');
  return path.join(base, 'agent-platform');
}

export function configFile(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(configDir(env), 'config.json');
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  let text: string;
  try {
    text = fs.readFileSync(configFile(env), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { instances: {} };
    throw err;
  }
  const parsed = JSON.parse(text) as Partial<Config>;
  const instances = parsed.instances && typeof parsed.instances === 'object' ? parsed.instances : {};
  return { url: typeof parsed.url === 'string' ? parsed.url : undefined, instances };
}

/** Writes the whole file atomically, created 0600 in a 0700 folder. */
export function writeConfig(config: Config, env: NodeJS.ProcessEnv = process.env): void {
  const dir = configDir(env);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = configFile(env);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
}

/** The saved state of one instance (created empty in config when absent). */
export function instanceOf(config: Config, url: string): InstanceState {
  config.instances[url] ??= {};
  return config.instances[url];
}

/** An instance URL as the key of the file: no trailing slash. */
export function normalizeUrl(raw: string): string {
  const u = new URL(raw);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TypeError(`${raw} is not an http(s) URL`);
  return u.toString().replace(/\/+$/, '');
}
