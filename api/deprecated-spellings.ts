// Request-body field names the API accepted in camelCase before every wire name followed the
// spec's rule (snake_case but for the identifiers the spec itself spells in camelCase). The old
// spelling is still accepted in request bodies until DEPRECATED_SPELLINGS_REMOVED_IN; answers use
// the snake_case name only. README: "Deprecated spellings".

/** The platform version that stops accepting the old spellings. */
export const DEPRECATED_SPELLINGS_REMOVED_IN = '2.0.0';

/** old camelCase spelling -> the name the document declares */
export const DEPRECATED_BODY_SPELLINGS: Readonly<Record<string, string>> = Object.freeze({
  apiVersion: 'api_version',
  currentPassword: 'current_password',
  newPassword: 'new_password',
  isDefault: 'is_default',
  mimeType: 'mime_type',
  roleKey: 'role_key',
});

/**
 * The body with its top-level old spellings renamed to the current ones. A body sending both
 * spellings of one field is left as it is: validation then names the old one as an unknown field
 * rather than choosing between two values.
 */
export function withCurrentSpellings(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const source = body as Record<string, unknown>;
  let renamed: Record<string, unknown> | undefined;
  for (const [old, current] of Object.entries(DEPRECATED_BODY_SPELLINGS)) {
    if (!Object.hasOwn(source, old) || Object.hasOwn(source, current)) continue;
    renamed ??= { ...source };
    renamed[current] = renamed[old];
    delete renamed[old];
  }
  return renamed ?? body;
}
