// One sandbox program's stdio over an attached container (the docker backend): the ready line and
// the assignment handshake, the same JSON lines the process backend exchanges over pipes.
import { PassThrough, type Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { NoAnswerError } from './readiness.ts';

const STDERR_TAIL_CHARS = 4000;
const HEAP_EXHAUSTED = /heap out of memory|Reached heap limit/i;

/** One program's stdio over an attached container: JSON lines out, JSON lines in. */
export class AttachedProgram {
  private buffer = '';
  private readonly lines: Array<Record<string, unknown>> = [];
  private waiter: (() => void) | null = null;
  private ended = false;
  private stderr = '';
  /** the program's V8 heap ran out (its fatal error was printed) */
  heapExhausted = false;
  /** settles when the attach stream ends: the container stopped, or this side let go */
  readonly exited: Promise<void>;
  private exit!: () => void;

  constructor(
    readonly label: string,
    private readonly stream: Duplex,
    docker: Docker,
  ) {
    this.exited = new Promise((resolve) => (this.exit = resolve));
    const out = new PassThrough();
    const err = new PassThrough();
    docker.modem.demuxStream(stream, out, err);
    out.setEncoding('utf8').on('data', (chunk: string) => this.take(chunk));
    err.setEncoding('utf8').on('data', (chunk: string) => {
      // V8's fatal line comes before a long stack trace: look for it as it passes, not in the tail
      if (HEAP_EXHAUSTED.test(this.stderr.slice(-100) + chunk)) this.heapExhausted = true;
      this.stderr = (this.stderr + chunk).slice(-STDERR_TAIL_CHARS);
    });
    const end = () => {
      this.ended = true;
      this.exit();
      this.waiter?.();
    };
    stream.on('end', end).on('close', end).on('error', end);
  }

  private take(chunk: string): void {
    this.buffer += chunk;
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      try {
        const parsed: unknown = JSON.parse(line);
        // only the handshake is read here (a line or two); later lines are dropped
        if (typeof parsed === 'object' && parsed !== null && this.lines.length < 16) this.lines.push(parsed as Record<string, unknown>);
      } catch {
        // not a handshake line
      }
    }
    if (this.buffer.length > 64 * 1024) this.buffer = '';
    this.waiter?.();
  }

  nextLine(timeoutMs: number): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => settle(true), timeoutMs);
      const settle = (timedOut = false) => {
        const line = this.lines.shift();
        if (line) resolve(line);
        else if (this.ended) reject(new Error(`${this.label} exited: ${this.stderr.trim().slice(-1000)}`));
        else if (timedOut) reject(new NoAnswerError(`${this.label} gave no answer within ${timeoutMs} ms: ${this.stderr.trim().slice(-1000)}`));
        else return;
        clearTimeout(timer);
        this.waiter = null;
      };
      this.waiter = () => settle();
      settle();
    });
  }

  get hasExited(): boolean {
    return this.ended;
  }

  send(message: unknown): void {
    if (!this.ended) this.stream.write(`${JSON.stringify(message)}\n`);
  }

  stderrTail(): string {
    return this.stderr;
  }

  /** lets go of the attach connection; the container's stdin stays open (StdinOnce is off) */
  detach(): void {
    this.stream.destroy();
  }
}
