#!/bin/sh
# Gets this machine ready for the npm scripts, then runs the given command in it:
#   - Node >= 22: the node on PATH if recent enough, else a Node fetched once from the npm
#     registry into .ci/.cache/node (the registry ships Node builds as node-linux-<arch>);
#   - the npm dependencies pinned by package-lock.json;
#   - redis-server for the tests (apt-get when we are root and REDIS_URL is not set);
#   - chromium for the browser tests, when running the tests (apt-get when we are root and
#     CHROMIUM_PATH is not set).
# Needs no input, prints progress to stderr, and does nothing (no network) once all is there.
# Usage, from package.json: sh .ci/env.sh <command> [args...]
set -eu

NODE_VERSION=24.21.0
NODE_MIN_MAJOR=22

say() { printf 'tollgate: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

[ "$#" -gt 0 ] || die "usage: sh .ci/env.sh <command> [args...]"

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cache="$root/.ci/.cache"

# Major version of the node binary $1, or 0 when it is missing or does not run.
node_major() {
  v=$("$1" -v 2>/dev/null) || v=v0
  v=${v#v}
  v=${v%%.*}
  case $v in '' | *[!0-9]*) v=0 ;; esac
  echo "$v"
}

install_node() {
  [ "$(uname -s)" = Linux ] || die "Node >= $NODE_MIN_MAJOR is needed; install it (only Linux builds are fetched automatically)."
  case $(uname -m) in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "Node >= $NODE_MIN_MAJOR is needed and the npm registry has no Node build for $(uname -m); install Node >= $NODE_MIN_MAJOR yourself." ;;
  esac
  command -v npm >/dev/null 2>&1 || die "npm is needed to fetch Node $NODE_VERSION; install Node >= $NODE_MIN_MAJOR with npm."

  say "installing Node $NODE_VERSION from the npm registry..."
  mkdir -p "$cache/node/bin"
  tmp=$(mktemp -d "$cache/tmp.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  # npm pack checks the tarball against the registry's integrity hash.
  tarball=$(cd "$tmp" && npm pack "node-linux-$arch@$NODE_VERSION" --silent --no-audit --no-fund --loglevel=error) ||
    die "could not fetch node-linux-$arch@$NODE_VERSION from the npm registry."
  tar -xzf "$tmp/$tarball" -C "$tmp" package/bin/node
  [ "$("$tmp/package/bin/node" -v 2>/dev/null)" = "v$NODE_VERSION" ] ||
    die "node-linux-$arch@$NODE_VERSION does not run on this machine; install Node >= $NODE_MIN_MAJOR yourself."
  # A rename within one file system: a concurrent run sees either no node or a whole one.
  mv -f "$tmp/package/bin/node" "$cache/node/bin/node"
  rm -rf "$tmp"
  trap - EXIT
}

# 1. Node
if command -v node >/dev/null 2>&1 && [ "$(node_major node)" -ge "$NODE_MIN_MAJOR" ]; then
  :
else
  if [ "$("$cache/node/bin/node" -v 2>/dev/null || true)" != "v$NODE_VERSION" ]; then
    install_node
  fi
  PATH="$cache/node/bin:$PATH"
  export PATH
fi

# 2. npm dependencies, when missing or older than the lock file.
if [ ! -f node_modules/.package-lock.json ] ||
  [ -n "$(find package-lock.json -newer node_modules/.package-lock.json)" ]; then
  say "installing npm dependencies (npm ci)..."
  npm ci --no-audit --no-fund --loglevel=error >&2 || die "npm ci failed."
fi

# 3. redis-server, for the tests (they report clearly when there is none).
if [ -z "${REDIS_URL:-}" ] && ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing redis-server with apt-get..."
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; } </dev/null >&2; then
      say "apt-get could not install redis-server; tests that need Redis will fail."
    fi
  else
    say "redis-server is not installed: run 'sudo apt-get install redis-server' (Debian/Ubuntu), or set REDIS_URL to a Redis >= 7.0."
  fi
fi

# 4. chromium, for the browser tests (test/examples/browser); they fail and say why without it.
#    The fast tier (npm run test:fast) has none.
if [ "$1" = vitest ] && [ "${TOLLGATE_TEST_TIER:-}" != fast ] && [ -z "${CHROMIUM_PATH:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing chromium with apt-get (for the browser tests)..."
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } </dev/null >&2; then
      say "apt-get could not install chromium; the browser tests will fail."
    fi
  else
    say "chromium is not installed: run 'sudo apt-get install chromium' (Debian/Ubuntu), or set CHROMIUM_PATH to a Chromium or Chrome; the browser tests fail without one."
  fi
fi

PATH="$root/node_modules/.bin:$PATH"
export PATH
exec "$@"
