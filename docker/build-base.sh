#!/usr/bin/env bash
# Builds the base image of the sandbox images OFFLINE, from this machine's own files: the node
# binary, the shared libraries it loads (as ldd lists them), CA certificates, and an /etc/passwd
# with the non-root user `sandbox` (uid 10001). No registry is contacted: the root filesystem is a
# tarball handed to `docker import`. Idempotent: an image already built from the same node binary
# and protocol version is kept.
#   docker/build-base.sh            -> agent-platform/base:p<protocol>
set -euo pipefail
cd "$(dirname "$0")/.."
PROTOCOL="$(sed -n "s/^export const SANDBOX_PROTOCOL_VERSION = '\([^']*\)';/\1/p" lib/sandbox-protocol.ts)"
[ -n "$PROTOCOL" ] || { echo "build-base: no SANDBOX_PROTOCOL_VERSION in lib/sandbox-protocol.ts" >&2; exit 1; }
TAG="${BASE_IMAGE:-agent-platform/base:p$PROTOCOL}"
NODE="$(readlink -f "$(command -v node)")"
# what the image is made of: a different node binary (or protocol) makes a different image
SOURCE_ID="$(sha256sum "$NODE" | cut -c1-16)-p$PROTOCOL"

if [ "$(docker image inspect -f '{{ index .Config.Labels "org.agent-platform.base-source" }}' "$TAG" 2>/dev/null || true)" = "$SOURCE_ID" ]; then
  echo "build-base: $TAG is up to date"
  exit 0
fi

ROOT="$(mktemp -d)"
trap 'rm -rf "$ROOT"' EXIT
mkdir -p "$ROOT"/{usr/bin,etc/ssl/certs,tmp,app,workspace,files,ipc}
chmod 1777 "$ROOT/tmp"
cp "$NODE" "$ROOT/usr/bin/node"
# every library node loads, under the path the loader looks for it at (symlinks resolved)
for lib in $(ldd "$NODE" | grep -o '/[^ ]*' | sort -u); do
  mkdir -p "$ROOT$(dirname "$lib")"
  cp -L "$lib" "$ROOT$lib"
done
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then cp -L /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/"; fi
cat > "$ROOT/etc/passwd" <<'PASSWD'
root:x:0:0:root:/nonexistent:/nonexistent
sandbox:x:10001:10001:sandbox:/workspace:/nonexistent
PASSWD
cat > "$ROOT/etc/group" <<'GROUP'
root:x:0:
sandbox:x:10001:
GROUP
echo 'hosts: files dns' > "$ROOT/etc/nsswitch.conf"
chown 10001:10001 "$ROOT/workspace" "$ROOT/files" "$ROOT/ipc"

tar -C "$ROOT" --numeric-owner -cf - . | docker import \
  --change 'USER 10001:10001' \
  --change 'WORKDIR /workspace' \
  --change 'ENV PATH=/usr/bin HOME=/workspace' \
  --change "LABEL org.agent-platform.protocol=$PROTOCOL org.agent-platform.base-source=$SOURCE_ID" \
  - "$TAG" >/dev/null
echo "build-base: built $TAG from $NODE ($(node --version))"
