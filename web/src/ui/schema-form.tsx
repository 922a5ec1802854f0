// A form made from an agent's input.schema: one labelled control per property by its type,
// enums as choices, required ones marked, and the fields this space locked shown locked (their
// value is the space's; the launch does not send them). Texts from the package are shown as text.
import { useState } from 'preact/hooks';

export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  enum?: unknown[];
  default?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
}

type Values = Record<string, string | boolean>;

function kindOf(s: JsonSchema): 'enum' | 'string' | 'number' | 'integer' | 'boolean' | 'json' {
  if (Array.isArray(s.enum)) return 'enum';
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  if (t === 'string' || t === 'number' || t === 'integer' || t === 'boolean') return t;
  return 'json';
}

function initial(s: JsonSchema): string | boolean {
  const k = kindOf(s);
  if (k === 'boolean') return s.default === true;
  if (s.default === undefined) return '';
  return k === 'json' ? JSON.stringify(s.default, null, 2) : k === 'enum' ? JSON.stringify(s.default) : String(s.default);
}

/** The input object from the form's values; throws a message for a value that does not parse. */
function collect(schema: JsonSchema, values: Values, locked: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, prop] of Object.entries(schema.properties ?? {})) {
    if (key in locked) continue;
    const v = values[key];
    const k = kindOf(prop);
    if (k === 'boolean') {
      out[key] = v === true;
      continue;
    }
    if (v === '' || v === undefined) continue;
    const text = String(v);
    // enum choices are held as their JSON text, so they parse back with their type
    if (k === 'string') out[key] = text;
    else if (k === 'number' || k === 'integer') out[key] = Number(text);
    else {
      try {
        out[key] = JSON.parse(text);
      } catch {
        throw new Error(`${prop.title ?? key} is not valid JSON.`);
      }
    }
  }
  return out;
}

export function SchemaForm(props: { schema: JsonSchema; locked: Record<string, unknown>; submitLabel: string; busy?: boolean; idPrefix: string; onSubmit: (input: Record<string, unknown>) => void }) {
  const { schema, locked, idPrefix } = props;
  const properties = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const [values, setValues] = useState<Values>(() => Object.fromEntries(properties.map(([k, p]) => [k, initial(p)])));
  const [problem, setProblem] = useState<string | null>(null);
  const set = (key: string, value: string | boolean) => setValues((v) => ({ ...v, [key]: value }));

  const submit = (e: Event) => {
    e.preventDefault();
    try {
      setProblem(null);
      props.onSubmit(collect(schema, values, locked));
    } catch (err) {
      setProblem((err as Error).message);
    }
  };

  return (
    <form class="schema-form" onSubmit={submit}>
      {properties.length === 0 ? <p>This agent takes no input.</p> : null}
      {properties.map(([key, prop]) => {
        const id = `${idPrefix}-${key}`;
        const label = prop.title ?? key;
        const help = prop.description ? `${id}-help` : undefined;
        const isLocked = key in locked;
        const isRequired = required.has(key) && !isLocked;
        const k = kindOf(prop);
        const common = { id, 'aria-describedby': help, required: isRequired && k !== 'boolean', disabled: isLocked };
        let control;
        if (isLocked) control = <input {...common} type="text" readOnly value={typeof locked[key] === 'string' ? (locked[key] as string) : JSON.stringify(locked[key])} />;
        else if (k === 'enum') {
          control = (
            <select {...common} value={String(values[key])} onChange={(e) => set(key, e.currentTarget.value)}>
              {isRequired ? null : <option value="">(none)</option>}
              {(prop.enum ?? []).map((option) => <option key={JSON.stringify(option)} value={JSON.stringify(option)}>{String(option)}</option>)}
            </select>
          );
        } else if (k === 'boolean') control = <input {...common} type="checkbox" checked={values[key] === true} onChange={(e) => set(key, e.currentTarget.checked)} />;
        else if (k === 'number' || k === 'integer') control = <input {...common} type="number" step={k === 'integer' ? 1 : 'any'} value={String(values[key])} onInput={(e) => set(key, e.currentTarget.value)} />;
        else if (k === 'string') control = <input {...common} type="text" value={String(values[key])} onInput={(e) => set(key, e.currentTarget.value)} />;
        else control = <textarea {...common} rows={4} value={String(values[key])} onInput={(e) => set(key, e.currentTarget.value)} />;
        return (
          <div class="field" key={key}>
            <label for={id}>{label}{isRequired ? <span class="required"> (required)</span> : null}{isLocked ? <span class="locked"> (locked by this space)</span> : null}{k === 'json' ? <span class="muted"> (JSON)</span> : null}</label>
            {control}
            {help ? <p id={help} class="help">{prop.description}</p> : null}
          </div>
        );
      })}
      {problem ? <p role="alert" class="problem">{problem}</p> : null}
      <button type="submit" class="primary" disabled={props.busy}>{props.submitLabel}</button>
    </form>
  );
}
