// The version of the protocol the platform speaks with its per-run programs (the sidecar's and the
// agent runtime's stdin assignment, their ready lines, the sidecar's HTTP surface). Container
// images of the sidecar and the agent carry it as a label and in their tag; the docker backend
// refuses to boot with images of another version (activities/sandbox/docker-images.ts).
// Raise it whenever a change to sidecar/ or agent-runtime/ changes what the platform sends or reads.
export const SANDBOX_PROTOCOL_VERSION = '3';

/** the label every image and container of the docker backend carries the protocol version in */
export const PROTOCOL_LABEL = 'org.agent-platform.protocol';
