// The one way to build an ajv instance for tenant-supplied JSON Schemas (manifests' input, output
// and connect-form schemas; the sidecar's output check): patterns run on the linear-time engine
// and every `format` check is bounded, so no schema or value can hold the thread.
import { Ajv2020, type Options } from 'ajv/dist/2020.js';
import type { Format, FormatDefinition } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { RE2JS } from 're2js';
import { linearRegExpEngine } from './linear-regex.ts';

// ajv-formats is CommonJS: its default export arrives wrapped or not depending on the loader
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

// Longest string each format check looks at; a longer one does not have the format. The short
// formats get room well past their standards' lengths; the rest get a cap under which even their
// heaviest checks finish in a few ms.
const LONG_FORMAT_LIMIT = 64 * 1024;
const FORMAT_LIMITS: Record<string, number> = {
  date: 32, time: 64, 'date-time': 128, 'iso-time': 64, 'iso-date-time': 128, duration: 128,
  email: 320, hostname: 254, ipv4: 15, ipv6: 64, uuid: 64, regex: 8 * 1024,
};
// base64 text may be a whole file; its check is one linear scan, like parsing the body itself
const UNCAPPED = new Set(['byte', 'password', 'binary']);

// ajv-formats' `url` pattern backtracks quadratically on long inputs. It runs here on RE2 with
// its private-address lookaheads taken out and checked on the host afterwards.
const URL_LOOKAHEAD = /\(\?!(?:[^()]|\([^()]*\))*\)/g;
const URL_USERINFO = '(?:\\S+(?::\\S*)?@)?';

function linearUrlFormat(): (text: string) => boolean {
  // compiled on first use: most schemas never ask for url, and the sidecar starts for every run
  let check: ((text: string) => boolean) | undefined;
  return (text) => (check ??= compileUrlFormat())(text);
}

function compileUrlFormat(): (text: string) => boolean {
  const source = (fullFormats.url as RegExp).source;
  const lookaheads = source.match(URL_LOOKAHEAD) ?? [];
  if (lookaheads.length === 0 || !source.includes(URL_USERINFO)) throw new Error('ajv-formats url pattern changed shape');
  const url = RE2JS.compile(
    RE2JS.translateRegExp(source.replace(URL_LOOKAHEAD, '').replace(URL_USERINFO, '(\\S+(?::\\S*)?@)?')),
    RE2JS.CASE_INSENSITIVE,
  );
  const privateHost = RE2JS.compile(`^(?:${lookaheads.map((l) => l.slice(3, -1)).join('|')})`);
  return (text) => {
    const match = url.exec(text);
    if (!match) return false;
    const hostStart = text.indexOf('://') + 3 + ((match[1] as string | undefined)?.length ?? 0);
    return !privateHost.test(text.slice(hostStart, hostStart + 32));
  };
}

function bounded(format: Format, limit: number): Format {
  if (typeof format === 'boolean') return format;
  if (typeof format === 'string') format = new RegExp(format);
  if (format instanceof RegExp || typeof format === 'function') {
    const check = format instanceof RegExp ? (text: string) => (format as RegExp).test(text) : format;
    return { type: 'string', validate: (text: string) => text.length <= limit && check(text) } as FormatDefinition<string>;
  }
  if (format.type !== undefined && format.type !== 'string') return format;
  const { validate } = format as FormatDefinition<string>;
  const check = validate instanceof RegExp ? (text: string) => validate.test(text) : validate as (text: string) => boolean;
  return { ...format, async: false, validate: (text: string) => text.length <= limit && check(text) } as FormatDefinition<string>;
}

const FORMATS: Record<string, Format> = {};
for (const [name, format] of Object.entries(fullFormats)) {
  if (UNCAPPED.has(name)) continue;
  const check = name === 'url' ? linearUrlFormat() : format;
  FORMATS[name] = bounded(check, FORMAT_LIMITS[name] ?? LONG_FORMAT_LIMIT);
}

/** Not strict: tenant schemas may carry annotations of their own (x-*, ui hints) that ajv does not know. */
export const TENANT_SCHEMA_OPTIONS = { strict: false, allErrors: true, logger: false } as const;

/** An ajv for tenant schemas: linear-time patterns (refusing what cannot be made so) and bounded formats. */
export function newTenantAjv(options: Options = {}): Ajv2020 {
  const ajv = new Ajv2020({ ...TENANT_SCHEMA_OPTIONS, ...options, code: { ...options.code, regExp: linearRegExpEngine() } });
  addFormats(ajv);
  for (const [name, format] of Object.entries(FORMATS)) ajv.addFormat(name, format);
  return ajv;
}
