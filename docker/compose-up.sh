#!/usr/bin/env bash
# Starts the compose deployment (docker/compose.yaml) from local images only: builds the platform
# and services images (docker/build-images.sh, no registry), writes docker/.compose.env with a
# generated encryption key, bootstrap token and database password on first start (kept after), then
# `up -d`. Extra arguments go to `up` (e.g. --scale platform-api=3). Uses `docker compose` (v2) when
# present, else docker-compose (v1).
#   docker/compose-up.sh [up options]
# COMPOSE_PROJECT_NAME picks the project (default: docker); AP_COMPOSE_ENV the env file; the AP_*
# settings docker/compose.yaml lists may also come from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
ENV_FILE="${AP_COMPOSE_ENV:-docker/.compose.env}"
docker/build-images.sh platform services
if [ ! -f "$ENV_FILE" ]; then
  umask 077
  {
    echo "AP_ENCRYPTION_KEY=$(node -e 'process.stdout.write(require("crypto").randomBytes(32).toString("base64"))')"
    echo "AP_BOOTSTRAP_TOKEN=bst_$(node -e 'process.stdout.write(require("crypto").randomBytes(24).toString("base64url"))')"
    echo "AP_DB_PASSWORD=$(node -e 'process.stdout.write(require("crypto").randomBytes(18).toString("base64url"))')"
  } > "$ENV_FILE"
  echo "compose-up: wrote $ENV_FILE (keep it: it holds the deployment's encryption key)"
fi
if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
"${COMPOSE[@]}" --env-file "$ENV_FILE" -f docker/compose.yaml up -d "$@"
echo "compose-up: API replicas at:"
for i in $(seq 1 "$("${COMPOSE[@]}" --env-file "$ENV_FILE" -f docker/compose.yaml ps -q platform-api | wc -l)"); do
  echo "  http://$("${COMPOSE[@]}" --env-file "$ENV_FILE" -f docker/compose.yaml port --index="$i" platform-api 3000)"
done
echo "compose-up: bootstrap token in $ENV_FILE (AP_BOOTSTRAP_TOKEN)"
