#!/usr/bin/env bash
# Stops the compose deployment: `down` with the given options. Without -v the worker's sandboxes
# stay, with the database and the engine's journal: the next `up` adopts them and their runs go on.
# With -v (--volumes) the deployment's data goes, the worker's too: the sandboxes its docker backend
# left (containers, run networks, host firewall rules) and its data directory (AP_WORKER_DATA_DIR),
# removed by the platform image's dist/remove-worker-data.js, run as the worker runs (root, the
# host's network namespace, the engine's socket). The shared agent-platform-egress network stays.
#   docker/compose-down.sh [down options]
set -euo pipefail
cd "$(dirname "$0")/.."
ENV_FILE="${AP_COMPOSE_ENV:-docker/.compose.env}"

setting() {
  if [ -n "${!1:-}" ]; then printf '%s' "${!1}"; elif [ -f "$ENV_FILE" ]; then sed -n "s/^$1=//p" "$ENV_FILE" | tail -n 1; fi
}

if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
"${COMPOSE[@]}" --env-file "$ENV_FILE" -f docker/compose.yaml down "$@"
volumes=false
for arg in "$@"; do case "$arg" in -v|--volumes) volumes=true ;; esac; done
DATA_DIR="$(setting AP_WORKER_DATA_DIR)"
remove_worker_data() {
  # the parent is bound, not the directory itself: a mount point could not be removed
  local parent
  parent="$(dirname "$1")"
  docker run --rm --network host --cap-add NET_ADMIN --user 0:0 \
    -v /var/run/docker.sock:/var/run/docker.sock -v "$parent:$parent" -e DATA_DIR="$1" \
    agent-platform/platform:local /app/dist/remove-worker-data.js
}
if $volumes && [ -n "$DATA_DIR" ]; then
  # the workers beyond the first keep their data inside the first's (docker/worker-entry.mjs)
  for replica in "$DATA_DIR"/worker-[0-9]*; do
    if [ -d "$replica" ]; then remove_worker_data "$replica"; fi
  done
  remove_worker_data "$DATA_DIR"
fi
