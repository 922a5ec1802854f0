// Which images a local integration's server may run in (the docker backend). The manifest's image
// is the tenant's choice, so only those the operator lists in LOCAL_INTEGRATION_IMAGES are started;
// without the setting, the agent image alone (a local server naming no image runs there).
import type { IntegrationSource } from './afps/manifest-types.ts';
import { SANDBOX_PROTOCOL_VERSION } from './sandbox-protocol.ts';

/** the agent image the docker backend builds when DOCKER_AGENT_IMAGE is unset */
export const DEFAULT_AGENT_IMAGE = `agent-platform/agent:p${SANDBOX_PROTOCOL_VERSION}`;

export interface LocalImageSettings {
  LOCAL_INTEGRATION_IMAGES: string[];
  DOCKER_AGENT_IMAGE?: string;
}

export function agentImageOf(config: LocalImageSettings): string {
  return config.DOCKER_AGENT_IMAGE ?? DEFAULT_AGENT_IMAGE;
}

/** The images a local integration may name. */
export function allowedLocalImages(config: LocalImageSettings): string[] {
  return config.LOCAL_INTEGRATION_IMAGES.length ? config.LOCAL_INTEGRATION_IMAGES : [agentImageOf(config)];
}

/** The image a local source names that the operator does not allow; null when it may run. */
export function refusedLocalImage(source: IntegrationSource, config: LocalImageSettings): string | null {
  if (source.kind !== 'local' || !('image' in source) || source.image === undefined) return null;
  if (source.image === agentImageOf(config) || allowedLocalImages(config).includes(source.image)) return null;
  return source.image;
}
