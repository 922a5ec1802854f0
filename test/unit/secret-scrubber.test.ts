// The scrub of answers to a local server whose credential the sidecar injects: the same forms as
// the credential proxy's, whole bodies or bodies cut anywhere (each form can straddle chunks).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { contentDecoders, secretScrubber } from '../../sidecar/secret-scrubber.ts';

const TOKEN = 'tok_live_4f9a7c2e1b8d6a3f';
const secrets = [`Bearer ${TOKEN}`, TOKEN];
const body = Buffer.from(`é start ${TOKEN} mid ${Buffer.from(TOKEN).toString('base64')} ${encodeURIComponent(`${TOKEN}&`)} "Bearer ${TOKEN}" end ${'x'.repeat(10)}${TOKEN}`);
// base64 is searched unpadded: its padding stays
const expected = 'é start [redacted] mid [redacted]== [redacted]%26 "[redacted]" end xxxxxxxxxx[redacted]';

async function through(chunks: Buffer[], ...stages: NodeJS.ReadWriteStream[]): Promise<string> {
  let stream: NodeJS.ReadableStream = Readable.from(chunks);
  for (const stage of stages) stream = stream.pipe(stage);
  const out: Buffer[] = [];
  for await (const chunk of stream) out.push(chunk as Buffer);
  return Buffer.concat(out).toString('utf8');
}

test('every form is replaced whether the body comes whole, byte by byte, or cut at every place', async () => {
  const scrubber = secretScrubber(secrets);
  assert.equal(await through([body], scrubber.stream()), expected);
  assert.equal(await through([...body].map((b) => Buffer.from([b])), scrubber.stream()), expected);
  for (let cut = 1; cut < body.length; cut++) {
    assert.equal(await through([body.subarray(0, cut), body.subarray(cut)], scrubber.stream()), expected, `cut at ${cut}`);
  }
  assert.equal(await through([Buffer.from('nothing secret')], scrubber.stream()), 'nothing secret');
});

test('header values are scrubbed; a body in gzip, br or both is decoded first; an unknown coding is not read', async () => {
  const scrubber = secretScrubber(secrets);
  assert.equal(scrubber.text(`session=${TOKEN}; Path=/`), 'session=[redacted]; Path=/');
  assert.equal(scrubber.text(`Bearer ${TOKEN}`), '[redacted]');
  assert.equal(await through([gzipSync(body)], ...contentDecoders('gzip')!, scrubber.stream()), expected);
  assert.equal(await through([brotliCompressSync(gzipSync(body))], ...contentDecoders('gzip, br')!, scrubber.stream()), expected);
  assert.deepEqual(contentDecoders(undefined), []);
  assert.deepEqual(contentDecoders('identity'), []);
  assert.equal(contentDecoders('zstd'), null);
});
