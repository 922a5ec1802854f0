# The platform (API and/or worker, by ROLE) for the compose deployment. Built by
# `docker/build-images.sh platform` from a context holding dist/, bin/start.mjs, db/ (its SQL), package.json and
# node_modules; the base image comes from docker/build-base.sh. docker/compose.yaml runs it as the
# API replicas and the worker.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG PROTOCOL
ARG BUNDLE_ID
COPY app/ /app/
USER 0:0
RUN ["/usr/bin/node", "-e", "require(\"fs\").mkdirSync(\"/data\", { mode: 0o700 }); require(\"fs\").chownSync(\"/data\", 10001, 10001)"]
LABEL org.agent-platform.protocol="${PROTOCOL}" org.agent-platform.program="platform" org.agent-platform.bundle="${BUNDLE_ID}"
USER 10001:10001
WORKDIR /app
# the image's own files are read-only to its user: its data goes to /data (mount a volume there)
ENV NODE_ENV=production DATA_DIR=/data
ENTRYPOINT ["/usr/bin/node", "--enable-source-maps"]
CMD ["/app/dist/platform.js"]
