// Outgoing mail over SMTP (nodemailer). SMTP_URL and MAIL_FROM are operator settings: without
// SMTP_URL mail is disabled, which is logged once when the mailer is first made (at boot) and which
// the routes report in their answers. The URL carries credentials: it is never logged, and errors
// are reported by their SMTP code and response only.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { Config } from './config.ts';
import type { Logger } from './log.ts';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export class MailError extends Error {
  /** nodemailer's error code (EAUTH, EENVELOPE, ETIMEDOUT, ECONNECTION ...) or 'ETIMEDOUT' for our own deadline */
  readonly code: string;
  readonly responseCode?: number;
  constructor(message: string, code: string, responseCode?: number) {
    super(message);
    this.name = 'MailError';
    this.code = code;
    this.responseCode = responseCode;
  }
}

export interface Mailer {
  readonly enabled: boolean;
  /** Sends one message; throws MailError when the server refuses it or SMTP_TIMEOUT_MS passes. */
  send(message: MailMessage): Promise<void>;
  /** The platform's public base URL, for links (no trailing slash). */
  readonly baseUrl: string;
  /**
   * Where a development or test instance without mail writes password-reset links instead of
   * sending them (DATA_DIR/reset-links.log); undefined with mail enabled and in production.
   */
  readonly resetLinkFile?: string;
  close(): void;
}

const mailers = new WeakMap<Config, Mailer>();

/** The mailer for this configuration: made (and its mode logged) once per configuration. */
export function mailerFor(config: Config, log: Logger): Mailer {
  let mailer = mailers.get(config);
  if (!mailer) {
    mailer = createMailer(config, log);
    mailers.set(config, mailer);
  }
  return mailer;
}

/** DATA_DIR/reset-links.log when this instance keeps reset links there (no SMTP_URL, not production). */
export function resetLinkFileOf(config: Config): string | undefined {
  if (config.SMTP_URL || config.NODE_ENV === 'production') return undefined;
  return path.join(path.resolve(config.DATA_DIR), 'reset-links.log');
}

/**
 * Appends one reset link to the file, one JSON line {at, to, link}, readable by the instance's
 * owner only. Never an HTTP answer: whoever can read the data directory already owns the instance.
 */
export async function writeResetLink(file: string, to: string, link: string): Promise<void> {
  await fsp.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await fsp.appendFile(file, JSON.stringify({ at: new Date().toISOString(), to, link }) + '\n', { mode: 0o600 });
}

/** Links are built from configuration (PUBLIC_URL, else the listening HOST:PORT), never from request headers. */
export function publicBaseUrl(config: Config): string {
  return (config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`).replace(/\/+$/, '');
}

/** The SMTP reply of a nodemailer error, without anything of the connection URL. */
function describe(err: unknown): MailError {
  const e = err as { code?: unknown; responseCode?: unknown; response?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : 'ESEND';
  const responseCode = typeof e?.responseCode === 'number' ? e.responseCode : undefined;
  const reply = typeof e?.response === 'string' ? e.response.slice(0, 200) : undefined;
  const message = reply ? `the mail server answered: ${reply}` : `sending failed (${code})`;
  return new MailError(message, code, responseCode);
}

export function createMailer(config: Config, log: Logger): Mailer {
  const baseUrl = publicBaseUrl(config);
  if (!config.SMTP_URL) {
    const resetLinkFile = resetLinkFileOf(config);
    if (resetLinkFile) {
      log.warn(`mail disabled: SMTP_URL is not set; invitation links must be passed on by hand and password-reset links are written to ${resetLinkFile} (${config.NODE_ENV} only)`, { resetLinkFile });
    } else {
      log.info('mail disabled: SMTP_URL is not set; invitation links must be passed on by hand and password-reset links are not delivered');
    }
    return { enabled: false, baseUrl, resetLinkFile, async send() { throw new MailError('mail is disabled', 'EDISABLED'); }, close() {} };
  }
  const timeout = config.SMTP_TIMEOUT_MS;
  const url = new URL(config.SMTP_URL);
  const transport = nodemailer.createTransport({
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : url.protocol === 'smtps:' ? 465 : 587,
    secure: url.protocol === 'smtps:',
    auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
    logger: false,
    debug: false,
  });
  log.info('mail enabled', { smtpHost: url.hostname, smtpPort: url.port || null, from: config.MAIL_FROM });
  return {
    enabled: true,
    baseUrl,
    async send(message) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new MailError(`the mail server did not answer within ${timeout} ms`, 'ETIMEDOUT')), timeout);
      });
      try {
        await Promise.race([transport.sendMail({ from: config.MAIL_FROM, ...message }).catch((err) => { throw describe(err); }), deadline]);
      } finally {
        clearTimeout(timer);
      }
    },
    close() {
      transport.close();
    },
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Plain text plus a minimal HTML part carrying the same words and link. */
export function templated(to: string, subject: string, paragraphs: string[], link: { url: string; label: string }, footer: string): MailMessage {
  const text = [...paragraphs, `${link.label}: ${link.url}`, footer].join('\n\n') + '\n';
  const html = [
    '<!doctype html><html><body style="font-family:sans-serif">',
    ...paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`),
    `<p><a href="${escapeHtml(link.url)}">${escapeHtml(link.label)}</a></p>`,
    `<p style="color:#666;font-size:small">${escapeHtml(footer)}</p>`,
    '</body></html>',
  ].join('\n');
  return { to, subject, text, html };
}
