// A real SMTP server on loopback (smtp-server) that keeps what it receives, with a small MIME reader
// for the messages nodemailer writes (multipart/alternative, 7bit / quoted-printable / base64).
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  headers: Record<string, string>;
  subject: string;
  text: string;
  html: string;
  raw: string;
}

export interface Inbox {
  port: number;
  /** smtp://user:pass@127.0.0.1:port */
  url: string;
  received: ReceivedMail[];
  /** The next message to this address not yet taken, waiting until it arrives. */
  next(to: string): Promise<ReceivedMail>;
  close(): Promise<void>;
}

export const SMTP_USER = 'platform-mailer';
export const SMTP_PASS = 's3cret-smtp-pass';

function splitHead(raw: string): { headers: Record<string, string>; body: string } {
  const at = raw.indexOf('\r\n\r\n');
  const head = at < 0 ? raw : raw.slice(0, at);
  const body = at < 0 ? '' : raw.slice(at + 4);
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const c = line.indexOf(':');
    if (c > 0) headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
  }
  return { headers, body };
}

function decode(body: string, encoding: string | undefined): string {
  const enc = (encoding ?? '7bit').toLowerCase();
  if (enc === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (enc === 'quoted-printable') {
    const bytes = body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, h: string) => `%${h}`);
    return decodeURIComponent(bytes.replace(/%(?![0-9A-F]{2})/gi, '%25'));
  }
  return body;
}

/** The text and HTML parts of a message (one level of multipart is what nodemailer writes here). */
export function readMime(raw: string): { headers: Record<string, string>; text: string; html: string } {
  const { headers, body } = splitHead(raw);
  const parts: { headers: Record<string, string>; body: string }[] = [];
  const boundary = /boundary="?([^";]+)"?/i.exec(headers['content-type'] ?? '')?.[1];
  if (boundary) {
    for (const chunk of body.split(`--${boundary}`).slice(1)) {
      if (chunk.startsWith('--')) break;
      parts.push(splitHead(chunk.replace(/^\r\n/, '')));
    }
  } else parts.push({ headers, body });
  const of = (type: string) => {
    const p = parts.find((x) => (x.headers['content-type'] ?? 'text/plain').toLowerCase().startsWith(type));
    return p ? decode(p.body.replace(/\r\n$/, ''), p.headers['content-transfer-encoding']) : '';
  };
  return { headers, text: of('text/plain'), html: of('text/html') };
}

export async function startInbox(opts: { refuse?: (to: string) => boolean } = {}): Promise<Inbox> {
  const received: ReceivedMail[] = [];
  const waiters: { to: string; resolve: (m: ReceivedMail) => void }[] = [];
  const taken = new Set<ReceivedMail>();
  const deliver = (m: ReceivedMail) => {
    received.push(m);
    const w = waiters.find((x) => m.to.includes(x.to));
    if (w) {
      waiters.splice(waiters.indexOf(w), 1);
      taken.add(m);
      w.resolve(m);
    }
  };
  const options: SMTPServerOptions = {
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    onAuth(auth, _session, cb) {
      if (auth.username === SMTP_USER && auth.password === SMTP_PASS) cb(null, { user: auth.username });
      else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, cb) {
      if (opts.refuse?.(address.address)) cb(Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 }));
      else cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const mime = readMime(raw);
        deliver({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          headers: mime.headers,
          subject: mime.headers.subject ?? '',
          text: mime.text,
          html: mime.html,
          raw,
        });
        cb();
      });
    },
  };
  const server = new SMTPServer(options);
  server.on('error', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    url: `smtp://${SMTP_USER}:${SMTP_PASS}@127.0.0.1:${port}`,
    received,
    next(to) {
      const have = received.find((m) => !taken.has(m) && m.to.includes(to));
      if (have) {
        taken.add(have);
        return Promise.resolve(have);
      }
      return new Promise((resolve) => waiters.push({ to, resolve }));
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
