# The platform (API and/or worker, by ROLE) for the compose deployment. Built by
# `docker/build-images.sh platform` from a context holding app/ (dist/, bin/start.mjs, db/ (its SQL),
# package.json and node_modules) and root/ (this machine's iptables with its extensions and
# libraries, which the worker's docker backend runs as root for its host firewall rules); the base
# image comes from docker/build-base.sh. docker/compose.yaml runs it as the API replicas and the worker.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG PROTOCOL
ARG BUNDLE_ID
COPY root/ /
COPY app/ /app/
USER 0:0
# /run: iptables takes its lock there
RUN ["/usr/bin/node", "-e", "const fs = require(\"fs\"); fs.mkdirSync(\"/data\", { mode: 0o700 }); fs.chownSync(\"/data\", 10001, 10001); fs.mkdirSync(\"/run\", { recursive: true, mode: 0o755 })"]
LABEL org.agent-platform.protocol="${PROTOCOL}" org.agent-platform.program="platform" org.agent-platform.bundle="${BUNDLE_ID}"
USER 10001:10001
WORKDIR /app
# the image's own files are read-only to its user: its data goes to /data (mount a volume there)
ENV NODE_ENV=production DATA_DIR=/data PATH=/usr/bin:/usr/sbin
ENTRYPOINT ["/usr/bin/node", "--enable-source-maps"]
CMD ["/app/dist/platform.js"]
