# The per-run agent runtime (agent-runtime/main.ts, bundled to dist/agent-runtime.cjs). Built by
# docker/build-images.sh from a context holding the bundles only; no shell, no package manager.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG PROTOCOL
ARG BUNDLE_ID
COPY agent-runtime.cjs /app/agent-runtime.cjs
# a local integration's container starts its MCP server through it (bin/mcp-bridge.ts)
COPY mcp-bridge.cjs /app/mcp-bridge.cjs
LABEL org.agent-platform.protocol="${PROTOCOL}" org.agent-platform.program="agent" org.agent-platform.bundle="${BUNDLE_ID}"
USER 10001:10001
WORKDIR /workspace
ENTRYPOINT ["/usr/bin/node"]
CMD ["/app/agent-runtime.cjs"]
