import './polyfill.ts';
import { createServer, type Http2Session } from 'node:http2';
import * as restate from '@restatedev/restate-sdk';
import type { Logger } from '../lib/log.ts';

type ServiceDefinition = restate.EndpointOptions['services'][number];

export interface WorkflowEndpoint {
  url: string;
  close(): Promise<void>;
}

/**
 * The SDK's log lines through the platform's logger. Its per-invocation lines (invoking, completed,
 * suspending) are debug here: at info they would cost a console write per step of every run.
 */
export function restateLogTransport(log: Logger): restate.LoggerTransport {
  return (params, message, ...rest) => {
    if (params.replaying) return;
    const text = [message, ...rest].map((part) => (part instanceof Error ? part.message : typeof part === 'string' ? part : JSON.stringify(part))).join(' ');
    const fields = params.context ? { invocation_id: params.context.invocationId, target: params.context.invocationTarget } : undefined;
    // A run that failed ends its workflow as a failure on purpose (workflows/run.ts): not a fault here.
    const expected = rest.some((part) => part instanceof Error && (part.name === 'RunEndedBadly' || part.name === 'CancelledError'));
    if (expected) log.debug(text, fields);
    else if (params.level === 'error') log.error(text, fields);
    else if (params.level === 'warn') log.warn(text, fields);
    else log.debug(text, fields);
  };
}

/**
 * Serves the given Restate services over HTTP/2 (bidirectional streaming) on host:port.
 * The port should be stable across restarts: the server pins in-flight invocations to the
 * address the deployment was registered with.
 */
export async function startWorkflowEndpoint(opts: {
  port: number;
  host?: string;
  services: unknown[];
  /** Replaces the SDK's console logger (its level is otherwise set by RESTATE_LOGGING). */
  logger?: restate.LoggerTransport;
  /** Restate request identity public keys (restate/request-identity.ts): requests not signed by one are refused */
  identityKeys?: string[];
}): Promise<WorkflowEndpoint> {
  const host = opts.host ?? '127.0.0.1';
  const handler = restate.createEndpointHandler({ services: opts.services as ServiceDefinition[], logger: opts.logger, identityKeys: opts.identityKeys });
  const server = createServer(handler);
  const sessions = new Set<Http2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });

  const close = () =>
    new Promise<void>((resolve) => {
      // Open invocation streams would keep close() waiting for ever; the server retries them
      // against whichever endpoint answers at this address next.
      server.close(() => resolve());
      for (const session of sessions) session.destroy();
    });

  const address = server.address();
  const port = address !== null && typeof address === 'object' ? address.port : opts.port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return { url: `http://${urlHost}:${port}`, close };
}
