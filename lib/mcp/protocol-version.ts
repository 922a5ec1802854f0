// The MCP revisions this implementation speaks. Tools, initialize and ping look the same in all of
// them; what differs (batching, the MCP-Protocol-Version header) is handled by the transport.

/** newest first: the client asks for the first, the server falls back to it */
export const SUPPORTED_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;

export const LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0];

export function isSupportedProtocolVersion(version: unknown): boolean {
  return (SUPPORTED_PROTOCOL_VERSIONS as readonly unknown[]).includes(version);
}

/** The server's answer to a client's requested revision: the same one when spoken here, else our latest. */
export function negotiateProtocolVersion(requested: string): string {
  return isSupportedProtocolVersion(requested) ? requested : LATEST_PROTOCOL_VERSION;
}
