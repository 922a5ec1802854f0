// Reads an untyped JSON document field by field, collecting one error per offending field so a
// manifest reports every fault at once. Each reader returns the typed value, or undefined when
// the field is absent or wrong (the error is already recorded).
import type { FieldError } from '../problem.ts';

export type FieldCode =
  | 'required' | 'invalid_type' | 'invalid_format' | 'out_of_range' | 'unknown_field'
  | 'invalid_value' | 'invalid_union' | 'invalid_key' | 'invalid_element' | 'invalid_manifest'
  // operation-specific field codes of the spec
  | 'no_tools_selected'
  // an identity_claims expression outside the JSONPath subset (lib/json-path.ts): 400 invalid_config
  | 'invalid_jsonpath';

export type JsonObject = Record<string, unknown>;

const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/** `parent.key`, or `parent["@acme/x"]` when the key is not a plain word. */
export function fieldPath(parent: string, key: string): string {
  if (!PLAIN_KEY.test(key)) return `${parent}[${JSON.stringify(key)}]`;
  return parent === '' ? key : `${parent}.${key}`;
}

export function indexPath(parent: string, index: number): string {
  return `${parent}[${index}]`;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The object without its undefined members, so parsed manifests hold only what was written. */
export function withoutUndefined<T extends object>(value: T): T {
  for (const key of Object.keys(value) as Array<keyof T>) if (value[key] === undefined) delete value[key];
  return value;
}

interface Presence {
  required?: boolean;
}

export interface StringRule extends Presence {
  min?: number;
  max?: number;
  pattern?: RegExp;
  /** what the pattern means, for the message */
  format?: string;
}

export class FieldReader {
  readonly errors: FieldError[] = [];

  fail(field: string, code: FieldCode, message: string): undefined {
    this.errors.push({ field, code, message });
    return undefined;
  }

  /** True when no error was recorded under `field` (or anywhere, without a field). */
  clean(field?: string): boolean {
    if (field === undefined) return this.errors.length === 0;
    return !this.errors.some((e) => e.field === field || e.field.startsWith(`${field}.`) || e.field.startsWith(`${field}[`));
  }

  private absent(field: string, value: unknown, presence: Presence): boolean {
    if (value !== undefined) return false;
    if (presence.required) this.fail(field, 'required', 'is required');
    return true;
  }

  /** An object whose keys are all in `keys` (each unknown key is its own error). */
  object(field: string, value: unknown, keys: readonly string[], presence: Presence = {}): JsonObject | undefined {
    if (this.absent(field, value, presence)) return undefined;
    if (!isJsonObject(value)) return this.fail(field, 'invalid_type', 'must be an object');
    this.onlyKeys(field, value, keys);
    return value;
  }

  onlyKeys(field: string, value: JsonObject, keys: readonly string[]): void {
    for (const key of Object.keys(value)) {
      if (!keys.includes(key)) this.fail(fieldPath(field, key), 'unknown_field', 'is not a known field');
    }
  }

  /** A map: an object whose keys are data, read entry by entry by the caller. */
  map(field: string, value: unknown, presence: Presence = {}): Array<[string, unknown, string]> | undefined {
    if (this.absent(field, value, presence)) return undefined;
    if (!isJsonObject(value)) return this.fail(field, 'invalid_type', 'must be an object');
    return Object.entries(value).map(([key, item]) => [key, item, fieldPath(field, key)]);
  }

  string(field: string, value: unknown, rule: StringRule = {}): string | undefined {
    if (this.absent(field, value, rule)) return undefined;
    if (typeof value !== 'string') return this.fail(field, 'invalid_type', 'must be a string');
    if (rule.min !== undefined && value.length < rule.min) {
      return this.fail(field, 'out_of_range', rule.min === 1 ? 'must not be empty' : `must be at least ${rule.min} characters`);
    }
    if (rule.max !== undefined && value.length > rule.max) {
      return this.fail(field, 'out_of_range', `must be at most ${rule.max} characters`);
    }
    if (rule.pattern && !rule.pattern.test(value)) {
      return this.fail(field, 'invalid_format', `must be ${rule.format ?? `of the form ${rule.pattern.source}`}`);
    }
    return value;
  }

  oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[], presence: Presence = {}): T | undefined {
    if (this.absent(field, value, presence)) return undefined;
    if (typeof value !== 'string') return this.fail(field, 'invalid_type', 'must be a string');
    if (!(allowed as readonly string[]).includes(value)) {
      return this.fail(field, 'invalid_value', `must be one of ${allowed.join(', ')}`);
    }
    return value as T;
  }

  integer(field: string, value: unknown, rule: Presence & { min?: number; max?: number } = {}): number | undefined {
    if (this.absent(field, value, rule)) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value)) return this.fail(field, 'invalid_type', 'must be an integer');
    if (rule.min !== undefined && value < rule.min) return this.fail(field, 'out_of_range', `must be at least ${rule.min}`);
    if (rule.max !== undefined && value > rule.max) return this.fail(field, 'out_of_range', `must be at most ${rule.max}`);
    return value;
  }

  boolean(field: string, value: unknown, presence: Presence = {}): boolean | undefined {
    if (this.absent(field, value, presence)) return undefined;
    if (typeof value !== 'boolean') return this.fail(field, 'invalid_type', 'must be a boolean');
    return value;
  }

  /** An array of strings (distinct unless told), each passing `element`, which records its own error and returns false. */
  stringList(
    field: string,
    value: unknown,
    rule: Presence & { min?: number; repeats?: boolean; element?: (path: string, item: string) => boolean } = {},
  ): string[] | undefined {
    if (this.absent(field, value, rule)) return undefined;
    if (!Array.isArray(value)) return this.fail(field, 'invalid_type', 'must be an array');
    if (rule.min !== undefined && value.length < rule.min) {
      return this.fail(field, 'out_of_range', `must hold at least ${rule.min} item${rule.min === 1 ? '' : 's'}`);
    }
    const seen = new Set<string>();
    let ok = true;
    value.forEach((item, i) => {
      const path = indexPath(field, i);
      if (typeof item !== 'string') {
        ok = false;
        this.fail(path, 'invalid_type', 'must be a string');
      } else if (!rule.repeats && seen.has(item)) {
        ok = false;
        this.fail(path, 'invalid_element', `repeats ${JSON.stringify(item)}`);
      } else {
        seen.add(item);
        if (rule.element && !rule.element(path, item)) ok = false;
      }
    });
    return ok ? (value as string[]) : undefined;
  }
}
