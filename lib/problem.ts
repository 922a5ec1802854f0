// Problem documents (RFC 9457). Every error the platform answers is built here from the catalog;
// routes and services throw `problem(code, ...)` and the error handler renders it.
import { errorCatalog, type ErrorCode } from './error-catalog.ts';
import { recordProblemCode } from './problem-log.ts';

export type { ErrorCode } from './error-catalog.ts';

/** One entry of a problem's errors[]: a field at fault. Extra members carry run-launch readiness data. */
export interface FieldError {
  field: string;
  code: string;
  message: string;
  title?: string;
  [extra: string]: unknown;
}

export interface ProblemOptions {
  detail?: string;
  param?: string;
  retryAfter?: number;
  errors?: FieldError[];
  /** a status the spec allows for this code in a named case (for example 413 for file_too_large) */
  status?: number;
  /** response headers that belong with this problem (Allow, ETag ...) */
  headers?: Record<string, string>;
  /** extra top-level members */
  extra?: Record<string, unknown>;
}

export class ProblemError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly param?: string;
  readonly retryAfter?: number;
  readonly errors?: FieldError[];
  readonly headers?: Record<string, string>;
  readonly extra?: Record<string, unknown>;

  constructor(code: ErrorCode, opts: ProblemOptions = {}) {
    const entry = errorCatalog[code];
    // A client error is answered, never logged with a stack: skip capturing one (it is costly).
    const limit = Error.stackTraceLimit;
    if ((opts.status ?? entry.status) < 500) Error.stackTraceLimit = 0;
    super(opts.detail ?? entry.title);
    Error.stackTraceLimit = limit;
    this.name = 'ProblemError';
    this.code = code;
    this.status = opts.status ?? entry.status;
    this.title = entry.title;
    this.detail = opts.detail ?? entry.title;
    this.param = opts.param;
    this.retryAfter = opts.retryAfter;
    this.errors = opts.errors;
    this.headers = opts.headers;
    this.extra = opts.extra;
  }
}

/** Builds the error to throw: `throw problem('version_exists', { detail: '...' })`. */
export function problem(code: ErrorCode, opts: ProblemOptions = {}): ProblemError {
  return new ProblemError(code, opts);
}

export function isProblem(err: unknown): err is ProblemError {
  return err instanceof ProblemError;
}

/** `{base}/` + the code with underscores turned to hyphens; case is kept. */
export function problemType(base: string, code: string): string {
  return `${base.replace(/\/+$/, '')}/${code.replace(/_/g, '-')}`;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: string;
  request_id: string;
  param?: string;
  retry_after?: number;
  errors?: FieldError[];
  [extra: string]: unknown;
}

/** The wire body of a problem for one request. */
export function problemBody(err: ProblemError, requestId: string, typeBase: string): ProblemBody {
  recordProblemCode(err.code);
  const body: ProblemBody = {
    type: problemType(typeBase, err.code),
    title: err.title,
    status: err.status,
    detail: err.detail,
    instance: `urn:appstrate:request:${requestId}`,
    code: err.code,
    request_id: requestId,
  };
  if (err.param !== undefined) body.param = err.param;
  if (err.retryAfter !== undefined) body.retry_after = err.retryAfter;
  if (err.errors !== undefined) body.errors = err.errors;
  if (err.extra) Object.assign(body, err.extra);
  return body;
}
