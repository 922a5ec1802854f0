// The realtime streams (Server-Sent Events) with the session cookie: the context goes in the query
// (orgId, spaceId, view_as). No replay after a reconnect, so `onOpen` tells the caller to read the
// current state again.
import { streamQuery } from './client.ts';

export interface LiveHandlers {
  run_update?: (data: Record<string, unknown>) => void;
  run_log?: (data: { runId: string; sequence: number; level: string; message: string; createdAt: string; data?: unknown }) => void;
  run_metric?: (data: { runId: string; cost: { usd: number; prompt_tokens: number; completion_tokens: number } }) => void;
  connection_update?: (data: Record<string, unknown>) => void;
  /** the stream is open (again): what happened while it was closed must be read */
  onOpen?: () => void;
  onState?: (state: 'live' | 'reconnecting') => void;
}

/** Opens the stream at path (/api/realtime/...); returns its closer. */
export function subscribe(path: string, handlers: LiveHandlers, extra: Record<string, string> = {}): () => void {
  const source = new EventSource(`${path}?${streamQuery({ verbose: 'true', ...extra })}`);
  for (const name of ['run_update', 'run_log', 'run_metric', 'connection_update'] as const) {
    const handler = handlers[name] as ((data: any) => void) | undefined;
    if (handler) source.addEventListener(name, (e) => handler(JSON.parse((e as MessageEvent<string>).data)));
  }
  source.onopen = () => {
    handlers.onState?.('live');
    handlers.onOpen?.();
  };
  source.onerror = () => handlers.onState?.('reconnecting');
  return () => source.close();
}
