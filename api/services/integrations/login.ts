// connect.login: one request built from the typed fields ({{field}} filled as typed, no URL
// encoding), no redirects, no cookie jar; the success criteria judged (any 2xx without them);
// only the declared outputs are kept. The typed password is never stored. The request goes through
// the organization's default proxy when it has one.
import type { EgressOptions } from '../../../lib/egress.ts';
import { evaluateSuccessCriterion, extractLoginOutput, type LoginResponse } from '../../../lib/afps/login-evaluation.ts';
import type { ConnectLogin } from '../../../lib/afps/manifest-types.ts';
import { parseSuccessCriterion } from '../../../lib/afps/success-criterion.ts';
import { problem } from '../../../lib/problem.ts';
import { jsonAnswer } from './identity-claims.ts';
import { flatHeaders, outbound, setCookies, type ProxyRoute } from './outbound.ts';

const PLACEHOLDER = /\{\{\s*([^{}\s]+)\s*\}\}/g;
export const LOGIN_TIMEOUT_MS = 15_000;
const LOGIN_MAX_BYTES = 1024 * 1024;

/** The body with every {{field}} filled as typed; 400 unresolved_placeholder when a field is missing. */
export function fillPlaceholders(template: string, fields: Record<string, unknown>): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    const value = Object.hasOwn(fields, name) ? fields[name] : undefined;
    if (value === undefined || value === null) {
      throw problem('unresolved_placeholder', {
        detail: `The login body names {{${name}}}, which the credentials do not fill.`,
        errors: [{ field: `credentials.${name}`, code: 'required', message: 'is needed by the login request' }],
      });
    }
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

export interface LoginResult {
  /** the declared outputs (name → value): the only part stored */
  outputs: Record<string, string>;
  /** the answer's body parsed as JSON (identity_claims read it), undefined when not JSON */
  answer: unknown;
}

/** Runs the login (through `via`, the organization's proxy, when given); answers the outputs and the parsed answer. */
export async function performLogin(login: ConnectLogin, fields: Record<string, unknown>, egress: EgressOptions, via: ProxyRoute | null, timeoutMs = LOGIN_TIMEOUT_MS): Promise<LoginResult> {
  const { request } = login;
  const body = request.body === undefined ? undefined : fillPlaceholders(request.body, fields);
  const headers: Record<string, string> = { accept: '*/*' };
  if (body !== undefined) headers['content-type'] = request.content_type ?? 'application/x-www-form-urlencoded';
  const host = new URL(request.url).host;
  const answer = await outbound(request.url, {
    method: request.method, headers, body, timeoutMs, maxBytes: LOGIN_MAX_BYTES,
    onTimeout: () => problem('timeout', { detail: `The login at ${host} did not complete within ${timeoutMs / 1000} s.` }),
    via,
  }, egress);
  const response: LoginResponse = { status: answer.status, headers: flatHeaders(answer.headers), cookies: setCookies(answer.headers), body: answer.body.toString('utf8') };

  const criteria = (login.success_criteria ?? []).map((c) => parseSuccessCriterion(c.condition));
  const succeeded = criteria.length === 0
    ? response.status >= 200 && response.status < 300
    : criteria.every((c) => c.ok && evaluateSuccessCriterion(c.criterion, response));
  // the spec answers a refused login 500 internal_error; the detail names no credential
  if (!succeeded) throw problem('internal_error', { detail: `The login at ${host} was refused (status ${response.status}).` });

  const outputs: Record<string, string> = {};
  for (const [name, output] of Object.entries(login.outputs)) {
    const value = extractLoginOutput(output, response);
    if (value === undefined || value === '') throw problem('internal_error', { detail: `The login at ${host} succeeded but gave no ${name}.` });
    outputs[name] = value;
  }
  return { outputs, answer: jsonAnswer(response.body) };
}
