// What a sidecar signs (with its run's secret, in the run events' Standard Webhooks headers) to
// read or refresh one of its run's connections: the action, the connection and the integration,
// instead of the empty body. A signature made for another runner request (a history read, another
// connection, a read instead of a refresh) therefore never opens a credential.
export type RunConnectionAction = 'read' | 'refresh';

export function runConnectionSigningPayload(action: RunConnectionAction, connectionId: string, integration: string): string {
  return `run-connection ${action}\n${connectionId}\n${integration}`;
}
