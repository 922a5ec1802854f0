// Request bodies: a declared length over the limit is refused before reading; the raw bytes are
// kept (idempotency fingerprints and signature checks need them) and JSON is parsed from them.
import type { Request } from '../http.ts';
import { problem } from '../../lib/problem.ts';
import { refuseBadJson } from './clean-input.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Refuses a declared length over the limit before anything reads the body. */
export function checkDeclaredLength(req: Request, limitBytes: number): void {
  const length = req.headers['content-length'];
  if (length === undefined) return;
  const declared = Number(length);
  if (Number.isFinite(declared) && declared > limitBytes) {
    throw problem('payload_too_large', { detail: `The request body exceeds ${limitBytes} bytes.` });
  }
}

export function readRawBody(req: Request, limitBytes: number): Promise<Buffer> {
  if (req.rawBody) return Promise.resolve(req.rawBody);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limitBytes) {
        failed = true;
        reject(problem('payload_too_large', { detail: `The request body exceeds ${limitBytes} bytes.` }));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (failed) return;
      req.rawBody = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      resolve(req.rawBody);
    });
    // a client that goes away mid-body (or is cut off by the request timeout) sent a bad request, not a server fault
    req.on('error', () => {
      if (!failed) reject(problem('invalid_request', { detail: 'The request body was not received in full.' }));
    });
  });
}

/** Parses a JSON body; an empty body is undefined; malformed JSON, bytes that are not UTF-8 and forbidden text are 400. */
export async function readJsonBody(req: Request, limitBytes: number): Promise<unknown> {
  const raw = await readRawBody(req, limitBytes);
  if (raw.length === 0) return undefined;
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/([a-z.+-]*\+)?json\b/i.test(type)) {
    throw problem('invalid_request', { param: 'Content-Type', detail: 'The request body must be application/json.' });
  }
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw problem('invalid_request', { detail: 'The request body is not valid UTF-8.' });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw problem('invalid_request', { detail: 'The request body is not valid JSON.' });
  }
  refuseBadJson(json);
  return json;
}
