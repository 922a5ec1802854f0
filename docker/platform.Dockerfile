# The platform (API and/or worker, by ROLE) for the compose deployment. Built by
# `docker/build-images.sh platform` from a context holding dist/, db/migrations, package.json and
# the production node_modules; the base image comes from docker/build-base.sh.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG PROTOCOL
COPY app/ /app/
LABEL org.agent-platform.protocol="${PROTOCOL}" org.agent-platform.program="platform"
USER 10001:10001
WORKDIR /app
ENV NODE_ENV=production
ENTRYPOINT ["/usr/bin/node", "--enable-source-maps"]
CMD ["/app/dist/platform.js"]
