// The hosted connect form: plain HTML generated from credentials.schema, no external assets, no
// script, served under a Content-Security-Policy that allows nothing but its inline style and
// posting back to this origin.
export const CONNECT_PAGE_HEADERS: Record<string, string> = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'Cache-Control': 'no-store',
  // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with the form's
  // POST, which the cookie-origin check refuses for a person signed in to the dashboard in the same
  // browser; same-origin still sends nothing (not the token in the address) to another site
  'Referrer-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
};

const STYLE = 'body{font:16px system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#222}'
  + 'label{display:block;margin:1rem 0 .25rem;font-weight:600}input{width:100%;padding:.5rem;box-sizing:border-box}'
  + 'small{color:#666}button{margin-top:1.5rem;padding:.6rem 1.2rem}';

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

interface FieldSchema {
  type?: unknown;
  title?: unknown;
  description?: unknown;
  format?: unknown;
  writeOnly?: unknown;
}

function properties(schema: Record<string, unknown> | undefined): Array<[string, FieldSchema]> {
  const props = schema?.properties;
  if (!props || typeof props !== 'object' || Array.isArray(props)) return [];
  return Object.entries(props as Record<string, FieldSchema>).filter(([, v]) => v && typeof v === 'object');
}

const isSecret = (name: string, f: FieldSchema) => f.format === 'password' || f.writeOnly === true || /pass|secret|token|key/i.test(name);

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`
    + `<meta name="referrer" content="same-origin"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

export function connectFormPage(o: { integrationId: string; authKey: string; token: string; schema: Record<string, unknown> | undefined }): string {
  const required = new Set(Array.isArray(o.schema?.required) ? (o.schema!.required as unknown[]).filter((x): x is string => typeof x === 'string') : []);
  const fields = properties(o.schema).map(([name, f]) => {
    const label = typeof f.title === 'string' ? f.title : name;
    const help = typeof f.description === 'string' ? `<small>${escapeHtml(f.description)}</small>` : '';
    const id = `f_${escapeHtml(name)}`;
    if (f.type === 'boolean') {
      return `<label for="${id}"><input type="checkbox" id="${id}" name="${escapeHtml(name)}" value="true" style="width:auto"> ${escapeHtml(label)}</label>${help}`;
    }
    const type = isSecret(name, f) ? 'password' : f.type === 'number' || f.type === 'integer' ? 'number' : 'text';
    return `<label for="${id}">${escapeHtml(label)}</label><input id="${id}" name="${escapeHtml(name)}" type="${type}" autocomplete="off"${required.has(name) ? ' required' : ''}>${help}`;
  }).join('');
  return page(`Connect ${o.integrationId}`,
    `<h1>Connect ${escapeHtml(o.integrationId)}</h1><p>Account access (${escapeHtml(o.authKey)}). What you enter goes to this platform only, encrypted at rest.</p>`
    + `<form method="post" action="/api/integrations/connect/start"><input type="hidden" name="token" value="${escapeHtml(o.token)}">${fields}`
    + `<button type="submit">Connect</button></form>`);
}

export function connectedPage(integrationId: string, label: string): string {
  return page('Connected', `<h1>Connected</h1><p>${escapeHtml(integrationId)} is connected (${escapeHtml(label)}). You can close this page.</p>`);
}

/** Form values typed per the schema: numbers as numbers, checkboxes as booleans. */
export function typedFields(form: URLSearchParams, schema: Record<string, unknown> | undefined): Record<string, unknown> {
  const types = new Map(properties(schema).map(([name, f]) => [name, f.type]));
  const out: Record<string, unknown> = {};
  for (const [name, value] of form) {
    if (name === 'token') continue;
    const type = types.get(name);
    if ((type === 'number' || type === 'integer') && value.trim() !== '' && Number.isFinite(Number(value))) out[name] = Number(value);
    else if (type === 'boolean') out[name] = value === 'true';
    else out[name] = value;
  }
  for (const [name, type] of types) if (type === 'boolean' && !(name in out)) out[name] = false;
  return out;
}
