#!/usr/bin/env bash
# Builds kube-apiserver and etcd of one Kubernetes line for the e2e layer from the Go module
# proxy, into a cache outside the work tree keyed by version. Idempotent: a binary that exists
# and reports the pinned version is not rebuilt. Prints the directory holding both binaries on
# its last line.
#
#   bash e2e/provision/build.sh [LINE]             build what is missing
#   bash e2e/provision/build.sh --print-dir [LINE]  only print the cache directory
#   bash e2e/provision/build.sh --force [LINE]     rebuild both
#   bash e2e/provision/build.sh --lines            print the pinned lines, newest first
#
# LINE is a line of versions.env (`1.36`) or its pinned version (`v1.36.3`); without it,
# RECONCILE_LOOP_K8S, and without that the newest line.
# Env: RECONCILE_LOOP_E2E_CACHE (default ~/.cache/reconcile-loop/e2e), RECONCILE_LOOP_K8S.
set -euo pipefail

# Checked first, with builtins only, so the message is clear even on a bare PATH.
if ! command -v go >/dev/null 2>&1 && [[ "${1:-}" != "--print-dir" && "${1:-}" != "--lines" ]]; then
  echo "e2e/provision/build.sh: 'go' is not on PATH; the e2e layer builds kube-apiserver and etcd" >&2
  echo "from the Go module proxy and needs a Go toolchain (>= 1.25). Install Go, or set" >&2
  echo "RECONCILE_LOOP_E2E_KUBECONFIG to run against an existing cluster." >&2
  exit 127
fi

src="${BASH_SOURCE[0]}"
[[ "$src" == */* ]] || src="./$src"
here="$(cd "${src%/*}" && pwd)"
# shellcheck source=lines.sh
source "$here/lines.sh"

force=0 print_dir=0
case "${1:-}" in
  --print-dir) print_dir=1; shift ;;
  --force) force=1; shift ;;
  --lines) echo "${K8S_LINES[*]}"; exit 0 ;;
  -*) echo "usage: $0 [--print-dir|--force|--lines] [LINE]" >&2; exit 2 ;;
esac
(( $# <= 1 )) || { echo "usage: $0 [--print-dir|--force|--lines] [LINE]" >&2; exit 2; }
resolve_line "${1:-}" || exit 2

cache_root="${RECONCILE_LOOP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-loop/e2e}"
out_dir="$cache_root/k8s-$KUBERNETES_VERSION-etcd-$ETCD_VERSION"
if (( print_dir )); then echo "$out_dir"; exit 0; fi

log() { printf '[e2e-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

mkdir -p "$out_dir"

# A binary is current when its --version output names the pinned version.
# Captured, not piped into grep -q: grep exiting early would SIGPIPE the binary and pipefail
# would call a current binary stale.
is_current() { # <binary> <expected substring>
  local out
  [[ -x "$1" ]] && out="$("$1" --version 2>/dev/null)" && [[ "$out" == *"$2"* ]]
}

# Compiles one wrapper module; counts packages as `go build -v` reports them so a first
# build (several minutes on two cores) shows it is moving.
build_one() { # <name> <module dir> <output> <ldflags>
  local name="$1" dir="$2" out="$3" ldflags="$4" start tmp n=0 line
  start=$(date +%s)
  tmp="$out.tmp.$$"
  # One wrapper per binary for every line (it only calls the upstream entry point); each line's
  # module holds just go.mod/go.sum, so a bump writes those and nothing else.
  cp "$here/wrappers/${dir##*/}/main.go" "$dir/main.go"
  log "$name: downloading modules (go mod download)"
  (cd "$dir" && go mod download)
  local total
  total=$(cd "$dir" && go list -deps . 2>/dev/null | wc -l) || total='?'
  log "$name: compiling ($total packages in the build, fewer when some are cached; the first build takes minutes)"
  set +e
  # -dwarf=false: the binaries are stripped (-s -w) anyway, so the debug info each package would
  # compile is thrown away at link; not generating it saves ~5 % of a build's CPU (etcd 3.6.5 from an
  # empty build cache: 96 s user+sys instead of 101 s).
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -v -trimpath -buildvcs=false \
      -gcflags=all=-dwarf=false -ldflags "$ldflags" -o "$tmp" .) 2>&1 | while IFS= read -r line; do
    # go build -v prints one import path per compiled package; anything else is a diagnostic.
    if [[ "$line" == "#"* || "$line" == *".go:"* || "$line" == "go: "* || "$line" == *" "* ]]; then
      printf '%s\n' "$line" >&2
    else
      n=$((n + 1))
      if (( n % 100 == 0 )); then log "$name: $n of at most $total packages compiled"; fi
    fi
  done
  local rc=${PIPESTATUS[0]}
  set -e
  if (( rc != 0 )); then
    rm -f "$tmp"
    log "$name: build FAILED (exit $rc)"
    exit "$rc"
  fi
  mv -f "$tmp" "$out"
  log "$name: built $out in $(( $(date +%s) - start ))s"
}

k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  minor="${KUBERNETES_VERSION#v1.}"; minor="${minor%%.*}"
  k8s_ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

total_start=$(date +%s)
if (( force == 0 )) && is_current "$out_dir/etcd" "etcd Version: ${ETCD_VERSION#v}"; then
  log "etcd $ETCD_VERSION: cached at $out_dir/etcd"
else
  build_one "etcd $ETCD_VERSION" "$LINE_DIR/etcd" "$out_dir/etcd" "-s -w"
fi
if (( force == 0 )) && is_current "$out_dir/kube-apiserver" "Kubernetes $KUBERNETES_VERSION"; then
  log "kube-apiserver $KUBERNETES_VERSION: cached at $out_dir/kube-apiserver"
else
  build_one "kube-apiserver $KUBERNETES_VERSION" "$LINE_DIR/kube-apiserver" "$out_dir/kube-apiserver" "$k8s_ldflags"
fi
is_current "$out_dir/etcd" "etcd Version: ${ETCD_VERSION#v}" || { log "etcd does not report $ETCD_VERSION"; exit 1; }
is_current "$out_dir/kube-apiserver" "Kubernetes $KUBERNETES_VERSION" || { log "kube-apiserver does not report $KUBERNETES_VERSION"; exit 1; }
log "ready in $(( $(date +%s) - total_start ))s"
echo "$out_dir"
