#!/usr/bin/env bash
# The Debian packages the tests need, installed only when missing: bubblewrap for the code
# sandbox (with python3, and prlimit and setpriv from util-linux), chromium for the web
# console's browser test (playwright-core drives it; no browser is downloaded), tmux for the
# test that drives `troupe chat` through a pseudo-terminal, postgresql for the store
# contract suite and the scale-out tests (the test run starts a throwaway cluster with its
# initdb and pg_ctl; the service the package may start is not used), curl for the README's
# commands the docs test runs, g++ and make for the package test's `npm install` (which builds
# better-sqlite3 12, a dependency of @langchain/langgraph-checkpoint-sqlite, from source when its
# prebuilt binary cannot be downloaded), and podman, runc and mmdebstrap for the image test (it
# makes a Debian base, builds the Dockerfile on it and runs the containers under runc), and fusefat
# with dosfstools for the test that mounts a FAT image (a file system that folds case) to check
# that troupe finds out whether a folder folds case rather than assuming it. Used by the
# integration tier's global setup (test/setup/system-packages.ts, so by `npm test`) and by
# .ci/run; the unit tier needs none of them. As root it runs apt-get; otherwise through sudo
# when sudo works without a password. When it cannot install, it says what is missing and how to install it,
# and the tests that need it fail with the same instruction: nothing is skipped.
set -uo pipefail

missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
{ command -v prlimit >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; } || missing+=(util-linux)
{ [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; } || missing+=(chromium)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v fusefat >/dev/null 2>&1 || missing+=(fusefat)
{ [ -x /usr/sbin/mkfs.vfat ] || command -v mkfs.vfat >/dev/null 2>&1; } || missing+=(dosfstools)
{ [ -n "${PG_BIN:-}" ] && [ -x "$PG_BIN/initdb" ]; } || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v pg_ctl >/dev/null 2>&1 || missing+=(postgresql)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc >/dev/null 2>&1 || missing+=(runc)
command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
[ "${#missing[@]}" -eq 0 ] && exit 0

sudo_prefix=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo_prefix="sudo -n"
  else
    echo "troupe: the tests need ${missing[*]}; install them with: sudo apt-get install ${missing[*]}" >&2
    exit 0
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "troupe: the tests need ${missing[*]} (Debian/Ubuntu package names); this machine has no apt-get: install them with its package manager" >&2
  exit 0
fi
echo "troupe: installing ${missing[*]} (apt-get)" >&2
if ! { $sudo_prefix apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_prefix apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
  echo "troupe: apt-get could not install ${missing[*]}; the tests that need them will fail until they are installed" >&2
fi
exit 0
