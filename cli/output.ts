// What the CLI prints: tables and coloured words for people (colour only on a terminal, never
// with NO_COLOR), one JSON document for machines (--json), and problem documents as
// `code: detail (request_id)`. The exit codes are documented in docs/integrators.md ("The command-line client") and `--help`.
import { PlatformError } from '../sdk/src/core.ts';

export const EXIT = {
  ok: 0,
  /** an unexpected failure of the CLI itself */
  internal: 1,
  /** a command line the CLI does not understand (a usage error, before any request) */
  usage: 2,
  /** 401 or 403: not signed in, a revoked or expired credential, or a missing permission */
  auth: 3,
  /** any other 4xx answer (not found, validation, conflict, rate limit after retries...) */
  client: 4,
  /** a 5xx answer */
  server: 5,
  /** the instance could not be reached */
  unreachable: 6,
  /** --wait/--follow: the run ended failed, timeout or cancelled */
  runFailed: 10,
  runTimeout: 11,
  runCancelled: 12,
} as const;

export const RUN_EXIT: Record<string, number> = { success: EXIT.ok, failed: EXIT.runFailed, timeout: EXIT.runTimeout, cancelled: EXIT.runCancelled };

/** A mistake on the command line: printed with a hint, exit 2. */
export class UsageError extends Error {}

export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof PlatformError) {
    if (err.status === 0) return EXIT.unreachable;
    if (err.status === 401 || err.status === 403) return EXIT.auth;
    if (err.status >= 400 && err.status < 500) return EXIT.client;
    if (err.status >= 500) return EXIT.server;
  }
  return EXIT.internal;
}

export interface Out {
  json: boolean;
  color: boolean;
  write(text: string): void;
  error(text: string): void;
}

export function makeOut(json: boolean): Out {
  const color = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR && process.env.TERM !== 'dumb';
  return {
    json,
    color,
    write: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    error: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  };
}

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, dim: 2, bold: 1 } as const;
export function paint(out: Out, colour: keyof typeof CODES, text: string): string {
  return out.color ? `\u001b[${CODES[colour]}m${text}\u001b[0m` : text;
}

export function statusWord(out: Out, status: string): string {
  const colour = status === 'success' ? 'green' : status === 'failed' || status === 'timeout' ? 'red' : status === 'cancelled' ? 'yellow' : 'blue';
  return paint(out, colour, status);
}

/** Prints a JSON document (--json). */
export function printJson(out: Out, value: unknown): void {
  out.write(JSON.stringify(value, null, 2));
}

/** Terminal escapes and other control characters of server-supplied text, made visible. */
export function clean(value: unknown): string {
  const s = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Rows as aligned columns under a header. */
export function printTable(out: Out, headers: string[], rows: unknown[][]): void {
  const cells = rows.map((r) => r.map((c) => clean(c).replace(/\n/g, ' ')));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd();
  out.write(paint(out, 'bold', line(headers)));
  for (const r of cells) out.write(line(r));
  if (rows.length === 0) out.write(paint(out, 'dim', '(none)'));
}

/** key: value lines. */
export function printFields(out: Out, fields: Array<[string, unknown]>): void {
  const width = Math.max(...fields.map(([k]) => k.length));
  for (const [k, v] of fields) out.write(`${paint(out, 'dim', `${k}:`.padEnd(width + 1))} ${clean(v)}`);
}

/** A failure as the user sees it; answers the exit code. */
export function reportError(out: Out, err: unknown): number {
  const code = exitCodeOf(err);
  if (err instanceof PlatformError) {
    if (out.json) {
      printJson(out, { ...err.problem, status: err.status || undefined, code: err.code });
    } else {
      const rid = err.request_id ? ` (${err.request_id})` : '';
      out.error(`${paint(out, 'red', clean(err.code))}: ${clean(err.message)}${rid}`);
      for (const e of err.errors) out.error(`  ${clean(e.field)}: ${clean(e.code)}: ${clean(e.message)}`);
      if (err.status === 401) out.error('Sign in again with `agent-platform login`, or pass --api-key.');
    }
  } else if (err instanceof UsageError) {
    if (out.json) printJson(out, { code: 'usage', detail: err.message });
    else out.error(`usage: ${err.message}\nSee \`agent-platform help\`.`);
  } else {
    const message = err instanceof Error ? err.message : String(err);
    if (out.json) printJson(out, { code: 'internal', detail: message });
    else out.error(`error: ${message}`);
  }
  return code;
}
