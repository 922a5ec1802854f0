// A problem document as a person reads it: its title, its detail, the fields at fault, and the
// request id to quote to support.
import { PlatformError } from '../api/client.ts';

export function ProblemView({ error, onDismiss }: { error: unknown; onDismiss?: () => void }) {
  const p = error instanceof PlatformError ? error : null;
  const title = p ? String(p.problem.title ?? `Error ${p.status}`) : 'Something went wrong';
  const detail = p ? p.message : error instanceof Error ? error.message : String(error);
  return (
    <div class="problem" role="alert">
      <p class="problem-title"><strong>{title}</strong>{p && p.code ? <> (<code>{p.code}</code>)</> : null}</p>
      <p class="problem-detail">{detail}</p>
      {p && p.status === 403 ? <p>Your role here does not allow this; ask an administrator of the organization.</p> : null}
      {p && p.errors.length > 0 ? (
        <ul class="problem-errors">
          {p.errors.map((e, i) => (
            <li key={i}><code>{e.field}</code>: {e.message}{typeof e.connect_url === 'string' ? <> — <a href={e.connect_url} target="_blank" rel="noopener">connect</a></> : null}</li>
          ))}
        </ul>
      ) : null}
      {p?.request_id ? <p class="problem-request">Request id: <code>{p.request_id}</code></p> : null}
      {onDismiss ? <button type="button" onClick={onDismiss}>Dismiss</button> : null}
    </div>
  );
}
