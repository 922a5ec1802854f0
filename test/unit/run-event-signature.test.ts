import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import {
  newRunEventId,
  newRunEventSecret,
  signRunEvent,
  signedRunEventHeaders,
  verifyRunEventSignature,
} from '../../lib/run-events.ts';
import { isProblem } from '../../lib/problem.ts';

const NOW = 1_760_000_000;
const body = JSON.stringify({ sequence: 1, type: 'started', at: '2025-10-09T08:53:20.000Z', data: {} });

function headersFor(secret: string, rawBody: string | Buffer, nowSec = NOW) {
  return signedRunEventHeaders(secret, rawBody, { id: 'msg_8c1f6a9e-0d0b-4e43-9d3c-5f2f4b1b7a10', nowSec });
}

// The detail tells the runner why it was refused (the code's catalog title alone does not).
const DETAILS: Record<string, RegExp> = {
  missing_signature_headers: /^webhook-id, webhook-timestamp and webhook-signature are all required\.$/,
  invalid_timestamp: /^webhook-timestamp must be an integer number of seconds since the Unix epoch\.$/,
  timestamp_out_of_tolerance: /^webhook-timestamp is more than 300 seconds away from the server clock\.$/,
  invalid_signature: /^No webhook-signature entry matches the body\.$/,
};

function rejectsWith(code: string, fn: () => unknown, detail = DETAILS[code]) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(isProblem(err), 'a problem error');
    assert.equal(err.code, code);
    assert.equal(err.status, 401);
    assert.match(err.detail, detail);
    return true;
  });
}

describe('run event secrets and ids', () => {
  test('a secret is whsec_ followed by base64 of 32 bytes, fresh each time', () => {
    const a = newRunEventSecret();
    const b = newRunEventSecret();
    assert.match(a, /^whsec_[A-Za-z0-9+/]+=*$/);
    assert.equal(Buffer.from(a.slice('whsec_'.length), 'base64').length, 32);
    assert.notEqual(a, b);
  });

  test('a message id is msg_<uuid>', () => {
    assert.match(newRunEventId(), /^msg_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
});

describe('signRunEvent', () => {
  test('is v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>"> keyed by the decoded secret', () => {
    const key = Buffer.alloc(32, 7);
    const secret = 'whsec_' + key.toString('base64');
    const expected = createHmac('sha256', key).update(`msg_1.${NOW}.${body}`).digest('base64');
    assert.equal(signRunEvent(secret, 'msg_1', NOW, body), `v1,${expected}`);
    assert.equal(signRunEvent(secret, 'msg_1', NOW, Buffer.from(body)), `v1,${expected}`);
  });

  test('an empty secret signs nothing and verifies nothing', () => {
    for (const empty of ['whsec_', '']) {
      assert.throws(() => signRunEvent(empty, 'msg_1', NOW, body), /^Error: run event secret is empty$/);
      const h = headersFor(newRunEventSecret(), body);
      assert.throws(() => verifyRunEventSignature(empty, h, body, NOW), /run event secret is empty/);
    }
  });

  test('signedRunEventHeaders gives the three headers with a fresh id by default', () => {
    const secret = newRunEventSecret();
    const h = signedRunEventHeaders(secret, body);
    assert.match(h['webhook-id'], /^msg_/);
    assert.match(h['webhook-timestamp'], /^\d+$/);
    assert.ok(Math.abs(Number(h['webhook-timestamp']) - Date.now() / 1000) < 5);
    assert.equal(h['webhook-signature'], signRunEvent(secret, h['webhook-id'], Number(h['webhook-timestamp']), body));
  });
});

describe('verifyRunEventSignature', () => {
  const secret = newRunEventSecret();

  test('accepts a valid signature and returns the id and timestamp', () => {
    const h = headersFor(secret, body);
    assert.deepEqual(verifyRunEventSignature(secret, h, body, NOW), { id: h['webhook-id'], timestamp: NOW });
  });

  test('accepts a Buffer body', () => {
    const h = headersFor(secret, body);
    assert.equal(verifyRunEventSignature(secret, h, Buffer.from(body), NOW).timestamp, NOW);
  });

  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    test(`missing ${name} gives missing_signature_headers`, () => {
      const h: Record<string, string | undefined> = { ...headersFor(secret, body) };
      delete h[name];
      rejectsWith('missing_signature_headers', () => verifyRunEventSignature(secret, h, body, NOW));
    });
    test(`empty ${name} gives missing_signature_headers`, () => {
      const h = { ...headersFor(secret, body), [name]: '' };
      rejectsWith('missing_signature_headers', () => verifyRunEventSignature(secret, h, body, NOW));
    });
  }

  for (const bad of ['abc', '1760000000.5', '-1760000000', '1e9', ' 1760000000', '17600000000000000']) {
    test(`timestamp ${JSON.stringify(bad)} gives invalid_timestamp`, () => {
      const h = { ...headersFor(secret, body), 'webhook-timestamp': bad };
      rejectsWith('invalid_timestamp', () => verifyRunEventSignature(secret, h, body, NOW));
    });
  }

  test('a timestamp too old or too far ahead gives timestamp_out_of_tolerance', () => {
    const old = headersFor(secret, body, NOW - 301);
    rejectsWith('timestamp_out_of_tolerance', () => verifyRunEventSignature(secret, old, body, NOW));
    const ahead = headersFor(secret, body, NOW + 301);
    rejectsWith('timestamp_out_of_tolerance', () => verifyRunEventSignature(secret, ahead, body, NOW));
  });

  test('the window edge is inclusive and the tolerance is configurable', () => {
    const edge = headersFor(secret, body, NOW - 300);
    assert.equal(verifyRunEventSignature(secret, edge, body, NOW).timestamp, NOW - 300);
    const late = headersFor(secret, body, NOW - 20);
    rejectsWith('timestamp_out_of_tolerance', () => verifyRunEventSignature(secret, late, body, NOW, 10), /^webhook-timestamp is more than 10 seconds away/);
  });

  test('a changed body gives invalid_signature', () => {
    const h = headersFor(secret, body);
    rejectsWith('invalid_signature', () => verifyRunEventSignature(secret, h, body.replace('started', 'failed'), NOW));
  });

  test('another secret gives invalid_signature', () => {
    const h = headersFor(newRunEventSecret(), body);
    rejectsWith('invalid_signature', () => verifyRunEventSignature(secret, h, body, NOW));
  });

  test('a changed id gives invalid_signature', () => {
    const h = { ...headersFor(secret, body), 'webhook-id': 'msg_other' };
    rejectsWith('invalid_signature', () => verifyRunEventSignature(secret, h, body, NOW));
  });

  test('a signature of another version or without a comma is ignored', () => {
    const valid = headersFor(secret, body)['webhook-signature'];
    const sig = valid.slice(3);
    for (const bad of [`v2,${sig}`, sig, `v1a,${sig}`, 'v1,', 'v1,!!!']) {
      const h = { ...headersFor(secret, body), 'webhook-signature': bad };
      rejectsWith('invalid_signature', () => verifyRunEventSignature(secret, h, body, NOW));
    }
  });

  test('any matching entry among several space-separated signatures is accepted', () => {
    const h = headersFor(secret, body);
    const otherSecretSig = signRunEvent(newRunEventSecret(), h['webhook-id'], NOW, body);
    const multi = { ...h, 'webhook-signature': `v2,abc ${otherSecretSig} ${h['webhook-signature']}` };
    assert.equal(verifyRunEventSignature(secret, multi, body, NOW).id, h['webhook-id']);
    const none = { ...h, 'webhook-signature': `v2,abc ${otherSecretSig}` };
    rejectsWith('invalid_signature', () => verifyRunEventSignature(secret, none, body, NOW));
  });
});
