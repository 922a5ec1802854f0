// The signed-in person and the context they chose: organization, space, role preview. A session
// pins neither organization nor space, so the choice is kept in this browser and sent as headers.
import { useEffect, useState } from 'preact/hooks';
import { api, context, PlatformError, unwrap, type Schemas } from './api/client.ts';
import { loadMe, NOBODY, type Me } from './api/me.ts';

export interface SessionState {
  phase: 'loading' | 'signed-out' | 'signed-in';
  user: { id: string; email: string; name: string } | null;
  orgs: Schemas['Organization'][];
  spaces: Schemas['Space'][];
  me: Me;
  error: unknown;
}

let state: SessionState = { phase: 'loading', user: null, orgs: [], spaces: [], me: NOBODY, error: null };
const listeners = new Set<() => void>();

function update(patch: Partial<SessionState>): void {
  state = { ...state, ...patch };
  for (const l of listeners) l();
}

export function useSession(): SessionState {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((t) => t + 1);
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  return state;
}

const known = () => ({ userId: state.user?.id ?? '', orgs: state.orgs, spaces: state.spaces });
const remembered = (key: string) => localStorage.getItem(`dashboard.${key}`);
const remember = (key: string, value: string | null) => (value ? localStorage.setItem(`dashboard.${key}`, value) : localStorage.removeItem(`dashboard.${key}`));

/** Reads the session; signed in, the organizations, spaces and permissions too. */
export async function start(): Promise<void> {
  try {
    // both need only the cookie: asked together, one round trip
    const [session, orgList] = await Promise.all([unwrap(api.GET('/api/auth/session')), unwrap(api.GET('/api/orgs'))]);
    const orgs = orgList.data;
    update({ user: session.user, orgs });
    const org = orgs.find((o) => o.id === remembered('org')) ?? orgs[0];
    await chooseOrg(org?.id ?? null);
    update({ phase: 'signed-in', error: null });
  } catch (err) {
    if (err instanceof PlatformError && err.status === 401) update({ phase: 'signed-out', user: null, error: null });
    else update({ phase: state.phase === 'loading' ? 'signed-out' : state.phase, error: err });
  }
}

/** Runs a change of context; its problem is shown in the frame rather than lost. */
async function shown(change: () => Promise<void>): Promise<void> {
  try {
    await change();
    if (state.error) update({ error: null });
  } catch (err) {
    update({ error: err });
  }
}

export const switchOrg = (orgId: string) => shown(() => chooseOrg(orgId));
export const switchSpace = (spaceId: string) => shown(() => chooseSpace(spaceId));
export const previewAs = (viewAs: string | null) => shown(async () => {
  context.viewAs = viewAs;
  update({ me: await loadMe(known()) });
});

async function chooseOrg(orgId: string | null): Promise<void> {
  context.orgId = orgId;
  context.spaceId = null;
  context.viewAs = null;
  remember('org', orgId);
  if (!orgId) {
    update({ spaces: [], me: await loadMe(known()) });
    return;
  }
  const spaces = (await unwrap(api.GET('/api/spaces'))).data.filter((s) => s.is_member);
  update({ spaces });
  const org = state.orgs.find((o) => o.id === orgId);
  const space = spaces.find((s) => s.id === remembered(`space.${orgId}`)) ?? spaces.find((s) => s.id === org?.default_space_id) ?? spaces[0];
  await chooseSpace(space?.id ?? null);
}

async function chooseSpace(spaceId: string | null): Promise<void> {
  context.spaceId = spaceId;
  if (context.orgId) remember(`space.${context.orgId}`, spaceId);
  update({ me: await loadMe(known()) });
}

export async function signOut(): Promise<void> {
  await api.POST('/api/auth/sign-out').catch(() => undefined);
  context.orgId = context.spaceId = context.viewAs = null;
  update({ phase: 'signed-out', user: null, orgs: [], spaces: [], me: NOBODY });
}
