// The list envelope and the three pagination styles (offset, cursor, sequence), with defaults,
// maximums, fallback to the default when a value is out of range, and RFC 8288 Link headers.
import { problem } from '../lib/problem.ts';
import type { Request } from './http.ts';
import { JsonText } from './route.ts';
import { z } from 'zod';

export interface ListEnvelope<T> {
  object: 'list';
  data: T[];
  hasMore: boolean;
  total?: number;
  /** present (true) when `total` is a lower bound: the count stopped at TOTAL_WINDOW past the offset */
  total_capped?: boolean;
  limit?: number;
}

export interface PageLimits {
  /** default page size */
  def: number;
  /** maximum page size */
  max: number;
}

export const DEFAULT_PAGE: PageLimits = { def: 20, max: 100 };

/** The deepest offset served: past it a page answers 400 invalid_request (param offset). */
export const MAX_OFFSET = 100_000;

/**
 * Lists that count their rows count at most this many past the page's offset; beyond it `total`
 * is offset + TOTAL_WINDOW with total_capped, and no rel="last" link is given.
 */
export const TOTAL_WINDOW = 2_000;

function integerOf(raw: unknown): number {
  if (typeof raw === 'number') return raw;
  return typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
}

/** An out-of-range or unparseable limit falls back to the default (spec, Pagination). */
export function pageLimit(raw: unknown, limits: PageLimits = DEFAULT_PAGE): number {
  const n = integerOf(raw);
  return Number.isInteger(n) && n >= 1 && n <= limits.max ? n : limits.def;
}

function nonNegative(raw: unknown): number {
  const n = integerOf(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/**
 * An integer query parameter: a value that is not an integer is refused (invalid_request with
 * param); the bounds are documented, and the helpers above bring an out-of-range value back.
 */
export function integerParam(doc: { description: string; minimum?: number; maximum?: number; default?: number }) {
  return z.coerce.number().int().optional().meta(doc);
}

/** The page-size parameter of a list with these limits. */
export function limitParam(limits: PageLimits = DEFAULT_PAGE) {
  return integerParam({ description: `page size; out of range falls back to the default`, minimum: 1, maximum: limits.max, default: limits.def });
}

/** Query schemas, documented in OpenAPI. */
export const OffsetQuery = z.object({
  limit: limitParam(),
  offset: integerParam({ description: `rows to skip; at most ${MAX_OFFSET} (more answers 400 invalid_request)`, minimum: 0, maximum: MAX_OFFSET, default: 0 }),
});
export const CursorQuery = z.object({
  limit: limitParam(),
  startingAfter: z.string().optional().describe('id of the last item received'),
  endingBefore: z.string().optional().describe('id of the first item received (previous page)'),
});
export const SequenceQuery = z.object({
  since: integerParam({ description: 'return entries with a sequence greater than this', minimum: 0, default: 0 }),
  limit: limitParam({ def: 1000, max: 1000 }),
});

export interface OffsetPage {
  limit: number;
  offset: number;
}

export function offsetPage(query: Record<string, unknown>, limits: PageLimits = DEFAULT_PAGE): OffsetPage {
  const offset = nonNegative(query.offset);
  if (offset > MAX_OFFSET) throw problem('invalid_request', { param: 'offset', detail: `Query parameter "offset" is invalid: at most ${MAX_OFFSET}; page deeper with a narrower filter.` });
  return { limit: pageLimit(query.limit, limits), offset };
}

/** A count of the rows a list matches, exact unless it reached the bound it was asked for. */
export interface ListTotal {
  n: number;
  capped: boolean;
}

export interface CursorPage {
  limit: number;
  startingAfter?: string;
  endingBefore?: string;
}

/**
 * The keyset condition of a cursor page over `<column> COLLATE "C"` (ids sort bytewise): appends the
 * cursor to params and answers the condition to AND onto the query and the order to read in
 * (DESC when paging backwards; cursorList puts the rows back in order).
 */
export function cursorCondition(page: CursorPage, params: unknown[], column = 'id'): { condition: string; order: 'ASC' | 'DESC' } {
  if (page.startingAfter) {
    params.push(page.startingAfter);
    return { condition: ` AND ${column} COLLATE "C" > $${params.length}`, order: 'ASC' };
  }
  if (page.endingBefore) {
    params.push(page.endingBefore);
    return { condition: ` AND ${column} COLLATE "C" < $${params.length}`, order: 'DESC' };
  }
  return { condition: '', order: 'ASC' };
}

export function cursorPage(query: Record<string, unknown>, limits: PageLimits = DEFAULT_PAGE): CursorPage {
  const s = typeof query.startingAfter === 'string' && query.startingAfter !== '' ? query.startingAfter : undefined;
  const e = typeof query.endingBefore === 'string' && query.endingBefore !== '' ? query.endingBefore : undefined;
  return { limit: pageLimit(query.limit, limits), startingAfter: s, endingBefore: s ? undefined : e };
}

export interface SequencePage {
  since: number;
  limit: number;
}

export function sequencePage(query: Record<string, unknown>, limits: PageLimits = { def: 1000, max: 1000 }): SequencePage {
  return { since: nonNegative(query.since), limit: pageLimit(query.limit, limits) };
}

function linkUrl(req: Request, params: Record<string, string | number | undefined>): string {
  const url = new URL(req.originalUrl, 'http://x');
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) url.searchParams.delete(k);
    else url.searchParams.set(k, String(v));
  }
  return `${url.pathname}${url.search}`;
}

function linkHeader(links: Array<[string, string]>): Record<string, string> {
  return links.length ? { Link: links.map(([rel, href]) => `<${href}>; rel="${rel}"`).join(', ') } : {};
}

/**
 * Offset lists: rows fetched with limit + 1 to learn whether more follow; total when known (a
 * capped total is a lower bound, so it gives no rel="last").
 */
export function offsetList<T>(req: Request, page: OffsetPage, rows: T[], counted?: number | ListTotal): { body: ListEnvelope<T>; headers: Record<string, string> } {
  const total = typeof counted === 'number' ? counted : counted?.n;
  const capped = typeof counted === 'object' && counted.capped;
  const hasMore = rows.length > page.limit;
  const data = hasMore ? rows.slice(0, page.limit) : rows;
  const links: Array<[string, string]> = [];
  if (hasMore) links.push(['next', linkUrl(req, { limit: page.limit, offset: page.offset + page.limit })]);
  if (page.offset > 0) {
    links.push(['prev', linkUrl(req, { limit: page.limit, offset: Math.max(0, page.offset - page.limit) })]);
    links.push(['first', linkUrl(req, { limit: page.limit, offset: 0 })]);
  }
  if (total !== undefined && !capped && (hasMore || page.offset > 0)) {
    const lastOffset = total === 0 ? 0 : Math.floor((total - 1) / page.limit) * page.limit;
    links.push(['last', linkUrl(req, { limit: page.limit, offset: lastOffset })]);
  }
  const body: ListEnvelope<T> = { object: 'list', data, hasMore, limit: page.limit };
  if (total !== undefined) body.total = total;
  if (capped) body.total_capped = true;
  return { body, headers: linkHeader(links) };
}

/** The list envelope around items already written as JSON text (see JsonText). */
export function listText(envelope: ListEnvelope<string>): JsonText {
  const { object, data, ...rest } = envelope;
  return new JsonText(`{"object":"${object}","data":[${data.join(',')}],${JSON.stringify(rest).slice(1)}`);
}

/**
 * Cursor lists: rows fetched with limit + 1 in the page's direction (ascending after
 * startingAfter, descending before endingBefore, then given back in list order).
 */
export function cursorList<T extends { id: string }>(req: Request, page: CursorPage, rows: T[]): { body: ListEnvelope<T>; headers: Record<string, string> } {
  const more = rows.length > page.limit;
  const data = more ? rows.slice(0, page.limit) : rows;
  if (page.endingBefore) data.reverse();
  const hasMore = page.endingBefore ? true : more;
  const links: Array<[string, string]> = [];
  if (data.length) {
    if (page.endingBefore ? true : more) links.push(['next', linkUrl(req, { limit: page.limit, startingAfter: data[data.length - 1].id, endingBefore: undefined })]);
    if (page.startingAfter || (page.endingBefore && more)) links.push(['prev', linkUrl(req, { limit: page.limit, endingBefore: data[0].id, startingAfter: undefined })]);
    if (page.startingAfter || page.endingBefore) links.push(['first', linkUrl(req, { limit: page.limit, startingAfter: undefined, endingBefore: undefined })]);
  }
  return { body: { object: 'list', data, hasMore }, headers: linkHeader(links) };
}

/** Sequence lists (run logs): entries after `since`, ordered by sequence. */
export function sequenceList<T extends { sequence: number }>(req: Request, page: SequencePage, rows: T[]): { body: ListEnvelope<T> & { next_since: number }; headers: Record<string, string> } {
  const hasMore = rows.length > page.limit;
  const data = hasMore ? rows.slice(0, page.limit) : rows;
  const nextSince = data.length ? data[data.length - 1].sequence : page.since;
  const links: Array<[string, string]> = hasMore ? [['next', linkUrl(req, { since: nextSince, limit: page.limit })]] : [];
  return { body: { object: 'list', data, hasMore, limit: page.limit, next_since: nextSince }, headers: linkHeader(links) };
}
