// Reads one file field of a multipart/form-data request into memory, with a byte limit. When the
// request declares its length, the buffer is sized once from it, so a large upload is held once
// (no chunk list concatenated at the end). Other fields are collected as short strings.
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { hasForbiddenText, printable } from './clean-text.ts';
import { problem } from './problem.ts';

export interface UploadedFile {
  field: string;
  filename: string;
  mimeType: string;
  bytes: Buffer;
}

export interface MultipartUpload {
  file: UploadedFile;
  /** text fields sent alongside the file */
  fields: Record<string, string>;
}

export interface ReadMultipartOptions {
  /** the file field to read; other file fields are drained and ignored */
  field: string;
  /** most bytes accepted for the file: over it is 413 payload_too_large */
  maxBytes: number;
}

export function isMultipart(req: IncomingMessage): boolean {
  return /^multipart\/form-data\b/i.test(req.headers['content-type'] ?? '');
}

function malformed(err: Error) {
  return problem('invalid_request', { detail: `The multipart request is malformed: ${printable(err.message)}.` });
}

/** Throws 400 invalid_request when the field is missing and 413 payload_too_large past the limit. */
export function readMultipartFile(req: IncomingMessage, opts: ReadMultipartOptions): Promise<MultipartUpload> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { files: 4, fields: 20, fieldSize: 64 * 1024, fileSize: opts.maxBytes } });
    } catch (err) {
      reject(problem('invalid_request', { param: 'Content-Type', detail: `The multipart request cannot be read: ${(err as Error).message}.` }));
      return;
    }
    const declared = Number(req.headers['content-length']);
    const capacity = Number.isFinite(declared) && declared > 0 ? Math.min(declared, opts.maxBytes) : 0;

    const fields: Record<string, string> = {};
    let file: UploadedFile | undefined;
    let failed = false;
    let pending = 0;
    let finished = false;

    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      req.unpipe(parser);
      req.resume(); // drain what is left so the answer can be sent
      reject(err);
    };
    const settle = () => {
      if (failed || !finished || pending > 0) return;
      if (!file) {
        fail(problem('invalid_request', { param: opts.field, detail: `The multipart request has no file field "${opts.field}".` }));
        return;
      }
      resolve({ file, fields });
    };

    parser.on('field', (name, value) => {
      if (hasForbiddenText(name) || hasForbiddenText(value)) {
        fail(problem('invalid_request', { param: printable(name), detail: 'A multipart field holds a NUL byte or an unpaired surrogate.' }));
        return;
      }
      fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      if (name !== opts.field || file || failed) {
        stream.resume();
        return;
      }
      if (hasForbiddenText(info.filename ?? '')) {
        stream.resume();
        fail(problem('invalid_request', { param: opts.field, detail: 'The file name holds a NUL byte or an unpaired surrogate.' }));
        return;
      }
      pending++;
      let buffer = capacity > 0 ? Buffer.allocUnsafe(capacity) : Buffer.alloc(0);
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        if (failed) return;
        if (capacity > 0 && size + chunk.length <= capacity) chunk.copy(buffer, size);
        else chunks.push(chunk);
        size += chunk.length;
      });
      stream.on('limit', () => {
        fail(problem('payload_too_large', { detail: `The uploaded file exceeds ${opts.maxBytes} bytes.` }));
      });
      // a body cut short errors the file stream before the parser: the same malformed request
      stream.on('error', (err: Error) => fail(malformed(err)));
      stream.on('close', () => {
        if (failed) return;
        if (chunks.length) buffer = Buffer.concat([buffer.subarray(0, size - chunks.reduce((n, c) => n + c.length, 0)), ...chunks]);
        else buffer = buffer.subarray(0, size);
        file = { field: name, filename: info.filename ?? '', mimeType: info.mimeType, bytes: buffer };
        pending--;
        settle();
      });
    });
    parser.on('error', (err: Error) => fail(malformed(err)));
    parser.on('close', () => {
      finished = true;
      settle();
    });
    req.on('error', (err: Error) => fail(malformed(err)));
    req.pipe(parser);
  });
}
