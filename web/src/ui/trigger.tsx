// Who launched a run: a member, an end-user, a schedule or an API key.
import type { Schemas } from '../api/client.ts';
import { href } from '../route.ts';

export function Trigger({ by }: { by: Schemas['Run']['triggered_by'] }) {
  switch (by.kind) {
    case 'member': return <span>member <code>{by.userId}</code></span>;
    case 'end_user': return <span>end-user <code>{by.end_user_id}</code></span>;
    case 'schedule': return <span>schedule {by.schedule_id ? <a href={href(['schedules', by.schedule_id])}><code>{by.schedule_id}</code></a> : null}</span>;
    case 'api_key': return <span>API key <code>{by.api_key_id}</code></span>;
  }
  return <span>{by.kind}</span>;
}
