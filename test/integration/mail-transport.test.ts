// The mailer on its own, against real sockets on loopback: mail disabled is logged once; the
// settings are checked at boot; a server that never answers fails the send at SMTP_TIMEOUT_MS; a
// refused login is reported without the SMTP credentials anywhere in the logs or the error.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { ConfigError, loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { MailError, createMailer, mailerFor } from '../../lib/mail.ts';
import { startInbox, SMTP_USER, type Inbox } from '../support/smtp-inbox.ts';

function capturingLog() {
  const lines: string[] = [];
  return { lines, log: createLogger('debug', 'test', (l) => lines.push(l)) };
}

const message = { to: 'someone@example.test', subject: 'Hello', text: 'hi', html: '<p>hi</p>' };

test('without SMTP_URL mail is disabled, logged once per configuration, and send refuses', async () => {
  const config = loadConfig({});
  const { lines, log } = capturingLog();
  const a = mailerFor(config, log);
  const b = mailerFor(config, log);
  assert.equal(a, b);
  assert.equal(a.enabled, false);
  assert.equal(lines.filter((l) => JSON.parse(l).msg.startsWith('mail disabled')).length, 1);
  await assert.rejects(a.send(message), (err: unknown) => err instanceof MailError && err.code === 'EDISABLED');
});

test('boot refuses SMTP_URL without MAIL_FROM, and a URL that is not smtp(s), naming the setting only', () => {
  assert.throws(() => loadConfig({ SMTP_URL: 'smtp://u:hunter2hunter2@127.0.0.1:2525' }), (err: unknown) => err instanceof ConfigError && /MAIL_FROM/.test(err.message) && !err.message.includes('hunter2'));
  assert.throws(() => loadConfig({ SMTP_URL: 'http://u:hunter2hunter2@127.0.0.1:2525', MAIL_FROM: 'a@b.test' }), (err: unknown) => err instanceof ConfigError && /SMTP_URL/.test(err.message) && !err.message.includes('hunter2'));
  assert.equal(loadConfig({ SMTP_URL: 'smtps://mail.example.test', MAIL_FROM: 'a@b.test' }).SMTP_TIMEOUT_MS, 10000);
});

describe('against loopback servers', () => {
  let silent: Server;
  const sockets: Socket[] = [];
  let inbox: Inbox;
  before(async () => {
    // accepts the connection and never greets
    silent = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    inbox = await startInbox();
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
    await inbox.close();
  });

  test('a server that never answers fails the send with a timeout error', async () => {
    const port = (silent.address() as AddressInfo).port;
    const { log } = capturingLog();
    const mailer = createMailer(loadConfig({ SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'a@b.test', SMTP_TIMEOUT_MS: '300' }), log);
    await assert.rejects(mailer.send(message), (err: unknown) => err instanceof MailError && err.code === 'ETIMEDOUT');
    assert.ok(sockets.length >= 1);
  });

  test('a refused login is an error naming the server reply, and the password is never logged', async () => {
    const password = 'wrong-pass-Zq9x';
    const { lines, log } = capturingLog();
    const mailer = createMailer(loadConfig({ SMTP_URL: `smtp://${SMTP_USER}:${password}@127.0.0.1:${inbox.port}`, MAIL_FROM: 'a@b.test' }), log);
    let caught: unknown;
    await mailer.send(message).catch((err) => { caught = err; });
    assert.ok(caught instanceof MailError, String(caught));
    assert.equal(caught.code, 'EAUTH');
    assert.match(caught.message, /535/);
    assert.ok(!caught.message.includes(password));
    assert.ok(lines.length >= 1);
    assert.ok(lines.every((l) => !l.includes(password)), lines.join('\n'));
    assert.equal(inbox.received.length, 0);
  });

  test('the right credentials deliver the text and HTML parts', async () => {
    const { lines, log } = capturingLog();
    const mailer = createMailer(loadConfig({ SMTP_URL: inbox.url, MAIL_FROM: 'Platform <from@b.test>' }), log);
    await mailer.send({ ...message, text: 'plain part', html: '<p>html part</p>' });
    const got = await inbox.next('someone@example.test');
    assert.deepEqual([got.from, got.subject, got.text, got.html], ['from@b.test', 'Hello', 'plain part', '<p>html part</p>']);
    assert.ok(lines.every((l) => !l.includes(new URL(inbox.url).password)));
  });
});
