// What a local MCP server whose credential the sidecar injects gets back from its vendor, with
// every form of the credential replaced (the credential proxy's forms, scrubForms: as written,
// percent-encoded, JSON-escaped, base64, Basic pairs): a vendor that echoes the credential back
// must not hand it to the server. Bodies are streamed: the last bytes that could begin a form
// split across chunks are held back until the next chunk or the end.
import { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { REDACTED, scrubForms } from '../lib/afps/credential-delivery.ts';

export interface SecretScrubber {
  /** a header value, scrubbed */
  text(value: string): string;
  /** a transform scrubbing the bytes passing through */
  stream(): Transform;
}

export function secretScrubber(secrets: string[]): SecretScrubber {
  // searched byte for byte: latin1 maps each byte to one character and back
  const forms = scrubForms(secrets).map((f) => Buffer.from(f, 'utf8').toString('latin1'));
  const hold = Math.max(1, ...forms.map((f) => f.length)) - 1;
  const scrub = (text: string) => {
    let out = text;
    for (const form of forms) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return out;
  };
  return {
    text: (value) => Buffer.from(scrub(Buffer.from(value, 'utf8').toString('latin1')), 'latin1').toString('utf8'),
    stream() {
      let pending = '';
      return new Transform({
        transform(chunk: Buffer, _encoding, done) {
          pending = scrub(pending + chunk.toString('latin1'));
          // a form not yet whole can only begin in the last `hold` bytes
          const ready = pending.length - hold;
          if (ready > 0) {
            this.push(Buffer.from(pending.slice(0, ready), 'latin1'));
            pending = pending.slice(ready);
          }
          done();
        },
        flush(done) {
          if (pending) this.push(Buffer.from(pending, 'latin1'));
          pending = '';
          done();
        },
      });
    },
  };
}

/**
 * Decoders undoing a response's content codings (gzip, deflate, br; in the order they are to be
 * applied), so compression cannot hide a credential from the scrub; null when one is not read here.
 */
export function contentDecoders(coding: string | undefined): Transform[] | null {
  const codings = (coding ?? '').split(',').map((c) => c.trim().toLowerCase()).filter((c) => c && c !== 'identity');
  const decoders: Transform[] = [];
  for (const c of codings.reverse()) {
    if (c === 'gzip' || c === 'x-gzip') decoders.push(zlib.createGunzip());
    else if (c === 'deflate') decoders.push(zlib.createInflate());
    else if (c === 'br') decoders.push(zlib.createBrotliDecompress());
    else return null;
  }
  return decoders;
}
