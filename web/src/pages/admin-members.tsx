// Members of the organization and their roles; members of the space and their space roles.
import { api, context, unwrap } from '../api/client.ts';
import { can, type Me } from '../api/me.ts';
import { useLoad } from '../ui/load.ts';
import { ProblemView } from '../ui/problem.tsx';
import { useAction } from '../ui/action.ts';

const ORG_ROLES = ['owner', 'admin', 'member', 'guest'] as const;

export function MembersPage({ me }: { me: Me }) {
  const orgId = context.orgId ?? '';
  const spaceId = context.spaceId ?? '';
  const members = useLoad(() => unwrap(api.GET('/api/orgs/{orgId}/members', { params: { path: { orgId } } })), [orgId]);
  const spaceMembers = useLoad(() => unwrap(api.GET('/api/spaces/{spaceId}/members', { params: { path: { spaceId } } })), [spaceId]);
  const roles = useLoad(() => unwrap(api.GET('/api/orgs/{orgId}/roles', { params: { path: { orgId } } })), [orgId]);
  const write = can(me, 'members:write');
  const writeSpace = can(me, 'space-members:write');

  const action = useAction();
  // the lists are read again either way: a refused change shows the role as it still is
  const setRole = (userId: string, role: (typeof ORG_ROLES)[number]) => action.run(() =>
    unwrap(api.PATCH('/api/orgs/{orgId}/members/{userId}', { params: { path: { orgId, userId } }, body: { role } })).finally(members.reload));
  const setSpaceRole = (userId: string, roleKey: string) => action.run(() =>
    unwrap(api.PATCH('/api/spaces/{spaceId}/members/{userId}', { params: { path: { spaceId, userId } }, body: { role_key: roleKey } })).finally(spaceMembers.reload));

  return (
    <section>
      <h1 tabIndex={-1}>Members</h1>
      {action.error ? <ProblemView error={action.error} /> : null}
      <h2>Organization</h2>
      {members.error ? <ProblemView error={members.error} /> : null}
      <table>
        <caption class="visually-hidden">Members of the organization</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Organization role</th></tr></thead>
        <tbody>
          {(members.data?.data ?? []).map((m) => (
            <tr key={m.userId}>
              <td>{m.name}</td><td>{m.email}</td>
              <td>{write ? (
                <select aria-label={`Organization role of ${m.email}`} value={m.role} onChange={(e) => void setRole(m.userId, e.currentTarget.value as (typeof ORG_ROLES)[number])}>
                  {ORG_ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
                </select>
              ) : m.role}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>This space</h2>
      {spaceMembers.error ? <ProblemView error={spaceMembers.error} /> : null}
      <table>
        <caption class="visually-hidden">Members of the space</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Space role</th></tr></thead>
        <tbody>
          {(spaceMembers.data?.data ?? []).map((m) => (
            <tr key={m.userId}>
              <td>{m.name}</td><td>{m.email}</td>
              <td>{writeSpace && roles.data ? (
                <select aria-label={`Space role of ${m.email}`} value={m.role_key} onChange={(e) => void setSpaceRole(m.userId, e.currentTarget.value)}>
                  {roles.data.data.map((r) => <option key={r.key} value={r.key}>{r.name}</option>)}
                </select>
              ) : m.role_key}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
