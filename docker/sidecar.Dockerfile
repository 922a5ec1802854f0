# The per-run sidecar (sidecar/main.ts, bundled to dist/sidecar.cjs). Built by docker/build-images.sh
# from a context holding the bundle only; the base image comes from docker/build-base.sh.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG PROTOCOL
ARG BUNDLE_ID
COPY sidecar.cjs /app/sidecar.cjs
LABEL org.agent-platform.protocol="${PROTOCOL}" org.agent-platform.program="sidecar" org.agent-platform.bundle="${BUNDLE_ID}"
USER 10001:10001
WORKDIR /files
ENTRYPOINT ["/usr/bin/node"]
CMD ["/app/sidecar.cjs"]
