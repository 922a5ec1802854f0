// Pages are addressed by the URL's hash (#/runs/run_...): the server serves one page at /, and a
// link to any page works from a bookmark or a new tab.
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  /** path segments, decoded: #/agents/@acme/bot -> ['agents', '@acme', 'bot'] */
  parts: string[];
  query: URLSearchParams;
}

export function currentRoute(): Route {
  const hash = location.hash.replace(/^#/, '') || '/runs';
  const [path, search = ''] = hash.split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(search) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const onChange = () => setRoute(currentRoute());
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** The href of a page: segments are encoded one by one (a package id's slash stays a separator). */
export function href(parts: string[], query?: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v) q.set(k, v);
  const search = q.size ? `?${q}` : '';
  return `#/${parts.map(encodeURIComponent).join('/')}${search}`;
}

export function navigate(parts: string[], query?: Record<string, string | undefined>): void {
  location.hash = href(parts, query);
}
