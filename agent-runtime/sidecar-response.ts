// The sidecar's answer as the runtime's fetch hands it back (sidecar-fetch.ts): what node's
// Response offers, without loading undici (fetch-headers.ts says why). The body is read straight
// from node's socket stream when a caller only wants it whole (text, json, bytes); it becomes a
// web ReadableStream only when a caller asks for .body (an event stream read as it arrives).
// blob() and formData() are rare enough to be node's own: they load undici and read through it.
import { finished, Readable } from 'node:stream';
import { FetchHeaders } from './fetch-headers.ts';

const utf8 = new TextDecoder();
/** whether a web stream was ever read from or cancelled (node's test takes web streams too; its types say only its own) */
const isDisturbed = (stream: ReadableStream): boolean => Readable.isDisturbed(stream as unknown as Readable);

/** bytes as node's Response decodes them: one byte-order mark dropped, then a decoder that drops another */
function decodeUtf8(bytes: Uint8Array): string {
  if (bytes.length === 0) return '';
  return utf8.decode(bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes);
}

/** node's AbortError, as its web stream adapter reports a body cut short */
function cutShort(cause: Error): Error {
  return Object.assign(new Error('The operation was aborted', { cause }), { name: 'AbortError', code: 'ABORT_ERR' });
}

/** a node stream's whole content; it fails as its web stream would (Readable.toWeb) */
function readWhole(source: Readable): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    source.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
    });
    finished(source, (err) => {
      if (err) {
        reject((err as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE' ? cutShort(err) : err);
        return;
      }
      // a fresh buffer of its own: never a slice of node's shared pool
      const whole = new Uint8Array(length);
      let at = 0;
      for (const chunk of chunks) {
        whole.set(chunk, at);
        at += chunk.length;
      }
      resolve(whole);
    });
  });
}

async function readStream(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!(value instanceof Uint8Array)) throw new TypeError('Received non-Uint8Array chunk');
    chunks.push(value);
    length += value.length;
  }
  const whole = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    whole.set(chunk, at);
    at += chunk.length;
  }
  return whole;
}

export class SidecarResponse {
  readonly type = 'default';
  readonly url = '';
  readonly redirected = false;
  /** the body, not yet read nor turned into a web stream */
  #source: Readable | null;
  #stream: ReadableStream<Uint8Array> | null;
  /** read whole straight from #source */
  #consumed = false;
  readonly #hasBody: boolean;

  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly headers: FetchHeaders,
    body: Readable | ReadableStream<Uint8Array> | null,
  ) {
    this.#hasBody = body !== null;
    this.#source = body instanceof Readable ? body : null;
    this.#stream = body instanceof Readable ? null : body;
  }

  get ok(): boolean {
    return this.status >= 200 && this.status <= 299;
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (!this.#hasBody) return null;
    if (this.#stream) return this.#stream;
    if (this.#source) {
      this.#stream = Readable.toWeb(this.#source) as ReadableStream<Uint8Array>;
      this.#source = null;
      return this.#stream;
    }
    // read already: what node's Response gives then, a stream both locked and disturbed
    const spent = new ReadableStream<Uint8Array>({ start: (controller) => controller.close() });
    void spent.getReader().read();
    this.#stream = spent;
    return spent;
  }

  get bodyUsed(): boolean {
    return this.#stream ? isDisturbed(this.#stream) : this.#consumed;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return (await this.#bytes()).buffer as ArrayBuffer;
  }

  async bytes(): Promise<Uint8Array> {
    return this.#bytes();
  }

  async text(): Promise<string> {
    return decodeUtf8(await this.#bytes());
  }

  async json(): Promise<unknown> {
    return JSON.parse(decodeUtf8(await this.#bytes()));
  }

  async blob(): Promise<Blob> {
    return this.#asNodeResponse().blob();
  }

  async formData(): Promise<FormData> {
    return this.#asNodeResponse().formData();
  }

  clone(): SidecarResponse {
    if (this.#unusable()) throw new TypeError('Response.clone: Body has already been consumed.');
    const headers = new FetchHeaders(this.headers);
    const stream = this.body;
    if (!stream) return new SidecarResponse(this.status, this.statusText, headers, null);
    const [mine, theirs] = stream.tee();
    this.#stream = mine;
    return new SidecarResponse(this.status, this.statusText, headers, theirs);
  }

  get [Symbol.toStringTag](): string {
    return 'Response';
  }

  #unusable(): boolean {
    if (!this.#hasBody) return false;
    return this.#stream ? this.#stream.locked || isDisturbed(this.#stream) : this.#consumed;
  }

  async #bytes(): Promise<Uint8Array> {
    if (this.#unusable()) throw new TypeError('Body is unusable: Body has already been read');
    if (!this.#hasBody) return new Uint8Array(0);
    if (this.#stream) return readStream(this.#stream);
    const source = this.#source!;
    this.#source = null;
    this.#consumed = true;
    return readWhole(source);
  }

  /** node's own Response over this body (it loads undici), for the readings this class leaves to it */
  #asNodeResponse(): Response {
    if (this.#unusable()) throw new TypeError('Body is unusable: Body has already been read');
    return new Response(this.body, { status: this.status, statusText: this.statusText, headers: this.headers as unknown as Headers });
  }
}
