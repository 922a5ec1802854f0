// Where file content lives: a folder under DATA_DIR, or an S3-compatible bucket so several API
// replicas share files. Content always streams: bytes are hashed and counted on the way through,
// and what one write holds in memory does not grow with the file (S3: at most two parts).
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, DeleteObjectCommand,
  GetObjectCommand, PutObjectCommand, S3Client, UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { Config } from './config.ts';

export interface StoredContent {
  size: number;
  sha256: string;
}

export interface ByteRange {
  /** first byte, inclusive */
  start: number;
  /** last byte, inclusive */
  end: number;
}

export interface FileStorage {
  readonly kind: 'local' | 's3';
  /**
   * Streams `source` under `key`; answers its size and SHA-256. More than `maxBytes` fails with
   * ContentTooLarge; any failure leaves nothing stored under the key.
   */
  put(key: string, source: Readable, opts: { maxBytes: number }): Promise<StoredContent>;
  /** the content, or the inclusive byte range of it */
  get(key: string, range?: ByteRange): Promise<Readable>;
  /** removes the content; a missing key is not an error */
  delete(key: string): Promise<void>;
}

export class ContentTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`content exceeds ${maxBytes} bytes`);
  }
}

/** Hashes and counts what passes; fails past maxBytes. */
class Meter extends Transform {
  readonly hash = createHash('sha256');
  size = 0;
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) return done(new ContentTooLarge(this.maxBytes));
    this.hash.update(chunk);
    done(null, chunk);
  }
  result(): StoredContent {
    return { size: this.size, sha256: this.hash.digest('hex') };
  }
}

const SAFE_KEY = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/;

function checkKey(key: string): string {
  if (!SAFE_KEY.test(key)) throw new Error(`unusable storage key ${JSON.stringify(key)}`);
  return key;
}

export function createLocalFileStorage(root: string): FileStorage {
  const dir = path.resolve(root);
  const where = (key: string) => path.join(dir, checkKey(key));
  return {
    kind: 'local',
    async put(key, source, { maxBytes }) {
      const target = where(key);
      const temp = path.join(dir, '.incoming', `${randomBytes(12).toString('hex')}`);
      await mkdir(path.dirname(temp), { recursive: true });
      await mkdir(path.dirname(target), { recursive: true });
      const meter = new Meter(maxBytes);
      try {
        await pipeline(source, meter, createWriteStream(temp, { flags: 'wx', highWaterMark: 1024 * 1024 }));
        await rename(temp, target);
      } catch (err) {
        await rm(temp, { force: true });
        throw err;
      }
      return meter.result();
    },
    async get(key, range) {
      const file = where(key);
      await stat(file);
      return createReadStream(file, { highWaterMark: 1024 * 1024, ...(range ? { start: range.start, end: range.end } : {}) });
    },
    async delete(key) {
      await rm(where(key), { force: true });
    },
  };
}

/** 6 MiB parts: above S3's 5 MiB minimum, small enough that memory stays flat; two in flight at most. */
const PART_BYTES = 6 * 1024 * 1024;
const PARTS_IN_FLIGHT = 2;

export interface S3Settings {
  endpoint?: string;
  bucket: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
}

export function createS3FileStorage(s: S3Settings): FileStorage {
  const client = new S3Client({
    endpoint: s.endpoint,
    region: s.region,
    forcePathStyle: s.forcePathStyle,
    credentials: s.accessKeyId && s.secretAccessKey ? { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey } : undefined,
    // checksums only where S3 requires them: several S3-compatible servers refuse the trailers
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const Bucket = s.bucket;

  async function multipart(key: string, parts: AsyncIterable<Buffer>): Promise<void> {
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key: key }));
    const done: Array<{ ETag?: string; PartNumber: number }> = [];
    const inFlight = new Set<Promise<void>>();
    let failure: unknown = null;
    try {
      let number = 0;
      for await (const body of parts) {
        const PartNumber = ++number;
        const sent: Promise<void> = client.send(new UploadPartCommand({ Bucket, Key: key, UploadId, PartNumber, Body: body, ContentLength: body.length }))
          .then((r) => { done.push({ ETag: r.ETag, PartNumber }); }, (err) => { failure ??= err; })
          .finally(() => inFlight.delete(sent));
        inFlight.add(sent);
        if (inFlight.size >= PARTS_IN_FLIGHT) await Promise.race(inFlight);
        if (failure) throw failure;
      }
      await Promise.all(inFlight);
      if (failure) throw failure;
      done.sort((a, b) => a.PartNumber - b.PartNumber);
      await client.send(new CompleteMultipartUploadCommand({ Bucket, Key: key, UploadId, MultipartUpload: { Parts: done } }));
    } catch (err) {
      await Promise.allSettled(inFlight);
      await client.send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId })).catch(() => {});
      throw err;
    }
  }

  return {
    kind: 's3',
    async put(key, source, { maxBytes }) {
      checkKey(key);
      const meter = new Meter(maxBytes);
      source.on('error', (err) => meter.destroy(err));
      source.pipe(meter);
      // parts of PART_BYTES; a content smaller than one part is sent in one PutObject
      const chunks: Buffer[] = [];
      let held = 0;
      const iterator = meter[Symbol.asyncIterator]();
      const takePart = async (): Promise<Buffer | null> => {
        while (held < PART_BYTES) {
          const next = await iterator.next();
          if (next.done) break;
          chunks.push(next.value as Buffer);
          held += (next.value as Buffer).length;
        }
        if (held === 0) return null;
        const all = Buffer.concat(chunks.splice(0), held);
        const part = all.subarray(0, Math.min(PART_BYTES, held));
        const rest = all.subarray(part.length);
        held = rest.length;
        if (rest.length) chunks.push(rest);
        return part;
      };
      const first = await takePart();
      if (first === null || first.length < PART_BYTES) {
        const body = first ?? Buffer.alloc(0);
        await client.send(new PutObjectCommand({ Bucket, Key: key, Body: body, ContentLength: body.length }));
        return meter.result();
      }
      async function* parts(): AsyncGenerator<Buffer> {
        yield first!;
        for (let part = await takePart(); part !== null; part = await takePart()) yield part;
      }
      await multipart(key, parts());
      return meter.result();
    },
    async get(key, range) {
      const out = await client.send(new GetObjectCommand({ Bucket, Key: checkKey(key), Range: range ? `bytes=${range.start}-${range.end}` : undefined }));
      return out.Body as Readable;
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket, Key: checkKey(key) }));
    },
  };
}

export function createFileStorage(config: Config): FileStorage {
  if (config.FILE_STORAGE === 's3') {
    return createS3FileStorage({
      endpoint: config.S3_ENDPOINT, bucket: config.S3_BUCKET!, region: config.S3_REGION,
      accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY, forcePathStyle: config.S3_FORCE_PATH_STYLE,
    });
  }
  return createLocalFileStorage(path.join(config.DATA_DIR, 'files'));
}

