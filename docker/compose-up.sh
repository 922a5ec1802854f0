#!/usr/bin/env bash
# Starts the compose deployment (docker/compose.yaml) from local images only: builds the platform,
# services, sidecar and agent images (docker/build-images.sh, no registry), writes docker/.compose.env
# with a generated encryption key, bootstrap token and database password on first start (kept
# after) and the worker's data directory when it names none, then `up -d`. Extra arguments go to
# `up` (e.g. --scale platform-api=3 --scale platform-worker=2: each worker its own data directory and port). Uses `docker compose` (v2) when present, else docker-compose (v1).
#   docker/compose-up.sh [up options]
# COMPOSE_PROJECT_NAME picks the project (default: docker); AP_COMPOSE_ENV the env file; the AP_*
# settings docker/compose.yaml lists may also come from the environment. AP_SUBNET (a /24, the
# former setting) is read as AP_SUBNET_PREFIX.
set -euo pipefail
cd "$(dirname "$0")/.."
ENV_FILE="${AP_COMPOSE_ENV:-docker/.compose.env}"
PROJECT="${COMPOSE_PROJECT_NAME:-docker}"

# a setting from the environment, else from the env file (its last line for it)
setting() {
  if [ -n "${!1:-}" ]; then printf '%s' "${!1}"; elif [ -f "$ENV_FILE" ]; then sed -n "s/^$1=//p" "$ENV_FILE" | tail -n 1; fi
}

docker/build-images.sh platform services sidecar agent
if [ ! -f "$ENV_FILE" ]; then
  umask 077
  {
    echo "AP_ENCRYPTION_KEY=$(node -e 'process.stdout.write(require("crypto").randomBytes(32).toString("base64"))')"
    echo "AP_BOOTSTRAP_TOKEN=bst_$(node -e 'process.stdout.write(require("crypto").randomBytes(24).toString("base64url"))')"
    echo "AP_DB_PASSWORD=$(node -e 'process.stdout.write(require("crypto").randomBytes(18).toString("base64url"))')"
  } > "$ENV_FILE"
  echo "compose-up: wrote $ENV_FILE (keep it: it holds the deployment's encryption key)"
fi
# the worker's data directory is kept like the key: its sandboxes' folders are there (the next worker adopts them)
if ! grep -q '^AP_WORKER_DATA_DIR=' "$ENV_FILE"; then
  DATA_DIR="$(setting AP_WORKER_DATA_DIR)"
  echo "AP_WORKER_DATA_DIR=${DATA_DIR:-/var/lib/agent-platform/$PROJECT}" >> "$ENV_FILE"
fi
case "$(setting AP_WORKER_DATA_DIR)" in
  /*) ;;
  *) echo "compose-up: AP_WORKER_DATA_DIR must be an absolute path (the same on the host and in the worker)" >&2; exit 1 ;;
esac
# Restate signs its calls to the worker's workflow endpoint with this key and the worker refuses any
# other caller (its port is on the host's address): generated once beside the worker's data, readable
# by the worker (root) and the Restate container's user (uid 10001) only.
WORKER_DATA="$(setting AP_WORKER_DATA_DIR)"
IDENTITY_KEY="$WORKER_DATA/restate-identity.pem"
if [ ! -f "$IDENTITY_KEY" ]; then
  mkdir -p "$WORKER_DATA"
  (umask 077 && node -e 'process.stdout.write(require("crypto").generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }))' > "$IDENTITY_KEY")
  if [ "$(id -u)" = 0 ]; then chown 0:10001 "$IDENTITY_KEY" && chmod 0640 "$IDENTITY_KEY"; fi
fi
SUBNET="$(setting AP_SUBNET)"
if [ -n "$SUBNET" ] && [ -z "$(setting AP_SUBNET_PREFIX)" ]; then
  PREFIX="$(printf '%s' "$SUBNET" | sed -n 's#^\([0-9]*\.[0-9]*\.[0-9]*\)\.0/24$#\1#p')"
  [ -n "$PREFIX" ] || { echo "compose-up: AP_SUBNET=$SUBNET is not a /24 (x.y.z.0/24): set AP_SUBNET_PREFIX=x.y.z instead" >&2; exit 1; }
  export AP_SUBNET_PREFIX="$PREFIX"
  grep -q '^AP_SUBNET_PREFIX=' "$ENV_FILE" || echo "AP_SUBNET_PREFIX=$PREFIX" >> "$ENV_FILE"
fi
# the shared file store: the bundled object-storage service at its fixed address unless one is named
if [ -z "$(setting AP_S3_ENDPOINT)" ]; then
  echo "AP_S3_ENDPOINT=http://$(setting AP_SUBNET_PREFIX | grep . || echo 172.30.87).8:9000" >> "$ENV_FILE"
fi

if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
"${COMPOSE[@]}" --env-file "$ENV_FILE" -f docker/compose.yaml up -d "$@"
echo "compose-up: API replicas at:"
for i in $(seq 1 "$("${COMPOSE[@]}" --env-file "$ENV_FILE" -f docker/compose.yaml ps -q platform-api | wc -l)"); do
  echo "  http://$("${COMPOSE[@]}" --env-file "$ENV_FILE" -f docker/compose.yaml port --index="$i" platform-api 3000)"
done
echo "compose-up: bootstrap token in $ENV_FILE (AP_BOOTSTRAP_TOKEN)"
