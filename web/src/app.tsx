// The dashboard's frame: sign-in gate, the context switchers, the navigation (only what the
// caller's permissions reach) and the page of the current address.
import { useEffect, useRef } from 'preact/hooks';
import { context } from './api/client.ts';
import { can, type Me } from './api/me.ts';
import { href, useRoute, type Route } from './route.ts';
import { previewAs, signOut, switchOrg, switchSpace, useSession } from './session.ts';
import { ProblemView } from './ui/problem.tsx';
import { SignIn } from './pages/sign-in.tsx';
import { RunsPage } from './pages/runs.tsx';
import { RunPage } from './pages/run.tsx';
import { AgentsPage } from './pages/agents.tsx';
import { AgentPage } from './pages/agent.tsx';
import { SchedulesPage } from './pages/schedules.tsx';
import { SchedulePage } from './pages/schedule.tsx';
import { ConnectionsPage } from './pages/connections.tsx';
import { ApiKeysPage } from './pages/admin-keys.tsx';
import { WebhooksPage } from './pages/admin-webhooks.tsx';
import { MembersPage } from './pages/admin-members.tsx';
import { ModelsPage } from './pages/admin-models.tsx';
import { OAuthClientsPage } from './pages/admin-oauth.tsx';

interface Section {
  parts: string[];
  label: string;
  permission: string;
}

const SECTIONS: Section[] = [
  { parts: ['runs'], label: 'Runs', permission: 'runs:read' },
  { parts: ['agents'], label: 'Agents', permission: 'agents:read' },
  { parts: ['schedules'], label: 'Schedules', permission: 'schedules:read' },
  { parts: ['connections'], label: 'Connections', permission: 'integrations:read' },
];
const ADMIN: Section[] = [
  { parts: ['admin', 'keys'], label: 'API keys', permission: 'api-keys:read' },
  { parts: ['admin', 'webhooks'], label: 'Webhooks', permission: 'webhooks:read' },
  { parts: ['admin', 'members'], label: 'Members', permission: 'members:read' },
  { parts: ['admin', 'models'], label: 'Models', permission: 'models:read' },
  { parts: ['admin', 'oauth'], label: 'OAuth clients', permission: 'oauth-clients:read' },
];

const PREVIEWS = ['admin', 'member', 'member:editor', 'member:runner', 'member:viewer', 'guest'];

function page(route: Route, me: Me) {
  const [first, second, ...rest] = route.parts;
  switch (first) {
    case 'runs': return second ? <RunPage id={second} me={me} /> : <RunsPage me={me} query={route.query} />;
    case 'agents': return second ? <AgentPage packageId={`${second}/${rest[0] ?? ''}`} me={me} /> : <AgentsPage me={me} />;
    case 'schedules': return second ? <SchedulePage id={second} me={me} /> : <SchedulesPage me={me} />;
    case 'connections': return <ConnectionsPage me={me} />;
    case 'admin':
      switch (second) {
        case 'keys': return <ApiKeysPage me={me} />;
        case 'webhooks': return <WebhooksPage me={me} />;
        case 'members': return <MembersPage me={me} />;
        case 'models': return <ModelsPage me={me} />;
        case 'oauth': return <OAuthClientsPage me={me} />;
      }
  }
  return <section><h1>Not found</h1><p>No page is at this address. <a href={href(['runs'])}>Go to the runs</a>.</p></section>;
}


export function App() {
  const s = useSession();
  const route = useRoute();
  const heading = useRef<HTMLDivElement>(null);
  // a new page: focus moves to its content, as a page load would
  useEffect(() => {
    heading.current?.querySelector<HTMLElement>('h1')?.focus();
  }, [route.parts.join('/')]);

  if (s.phase === 'loading') return <main id="main" class="boot"><p>Loading…</p></main>;
  if (s.phase === 'signed-out') return <SignIn error={s.error} />;
  const me = s.me;
  const nav = (list: Section[]) => list.filter((x) => can(me, x.permission));
  const active = route.parts.join('/');
  const link = (x: Section) => (
    <li key={x.label}><a href={href(x.parts)} aria-current={active.startsWith(x.parts.join('/')) ? 'page' : undefined}>{x.label}</a></li>
  );
  const orgId = context.orgId ?? '';
  const spaceId = context.spaceId ?? '';
  const actualRole = s.orgs.find((o) => o.id === orgId)?.role;
  const admin = nav(ADMIN);
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); heading.current?.querySelector<HTMLElement>('h1')?.focus(); }}>Skip to content</a>
      <header class="top">
        <span class="brand">Agent Platform</span>
        <div class="context">
          <label for="org-switch">Organization</label>
          <select id="org-switch" value={orgId} onChange={(e) => void switchOrg(e.currentTarget.value)}>
            {s.orgs.map((o) => <option key={o.id} value={o.id}>{o.name}</option>)}
          </select>
          <label for="space-switch">Space</label>
          <select id="space-switch" value={spaceId} onChange={(e) => void switchSpace(e.currentTarget.value)}>
            {s.spaces.map((sp) => <option key={sp.id} value={sp.id}>{sp.name}{sp.kind === 'personal' ? ' (personal)' : ''}</option>)}
          </select>
          {actualRole === 'owner' || actualRole === 'admin' ? (
            <>
              <label for="view-as">Preview as</label>
              <select id="view-as" value={context.viewAs ?? ''} onChange={(e) => void previewAs(e.currentTarget.value || null)}>
                <option value="">myself ({actualRole})</option>
                {PREVIEWS.map((p) => <option key={p} value={p}>{p}</option>)}
              </select>
            </>
          ) : null}
        </div>
        <span class="who">{s.user?.email}</span>
        <button type="button" class="small" onClick={() => void signOut()}>Sign out</button>
      </header>
      <nav aria-label="Main" class="main-nav">
        <ul>{nav(SECTIONS).map(link)}</ul>
        {admin.length ? (
          <>
            <h2 class="nav-group" id="admin-nav">Admin</h2>
            <ul aria-labelledby="admin-nav">{admin.map(link)}</ul>
          </>
        ) : null}
      </nav>
      <main id="main" ref={heading as any} class="page">
        {s.error ? <ProblemView error={s.error} /> : null}
        {orgId ? <div key={`${orgId}/${spaceId}/${context.viewAs ?? ''}/${route.parts.join('/')}`}>{page(route, me)}</div>
          : <section><h1 tabIndex={-1}>No organization</h1><p>You are not a member of an organization yet: accept an invitation, or ask an administrator for one.</p></section>}
      </main>
    </>
  );
}
