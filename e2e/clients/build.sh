#!/usr/bin/env bash
# Builds client-go-check (e2e/clients/client-go: client-go's own informers, typed, dynamic and
# leader-election clients, pinned in its go.mod) from the Go module proxy into the e2e binary cache,
# keyed by client-go's version and a hash of the program's sources, so an edit or a bump rebuilds
# and nothing else does. Prints the binary's path on its last line.
#
#   bash e2e/clients/build.sh               build when missing, print the path
#   bash e2e/clients/build.sh --print-path  only print the path
#   bash e2e/clients/build.sh --force       rebuild
#
# Env: RECONCILE_LOOP_E2E_CACHE (default ~/.cache/reconcile-loop/e2e), as e2e/provision/build.sh.
set -euo pipefail

src="${BASH_SOURCE[0]}"
[[ "$src" == */* ]] || src="./$src"
here="$(cd "${src%/*}" && pwd)"
mod="$here/client-go"

force=0 print_only=0
case "${1:-}" in
  --print-path) print_only=1 ;;
  --force) force=1 ;;
  "") ;;
  *) echo "usage: $0 [--print-path|--force]" >&2; exit 2 ;;
esac

version="$(awk '$1 == "k8s.io/client-go" { print $2 }' "$mod/go.mod")"
[[ -n "$version" ]] || { echo "e2e/clients/build.sh: no k8s.io/client-go requirement in $mod/go.mod" >&2; exit 1; }
hash="$(cat "$mod/go.mod" "$mod/go.sum" "$mod"/*.go | sha256sum | cut -c1-12)"
cache_root="${RECONCILE_LOOP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-loop/e2e}"
out="$cache_root/clients/client-go-$version-$hash/client-go-check"
if (( print_only )); then echo "$out"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  echo "e2e/clients/build.sh: 'go' is not on PATH; client-go-check is built from the Go module proxy" >&2
  exit 127
fi

log() { printf '[clients-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
if (( force == 0 )) && [[ -x "$out" ]]; then
  log "client-go-check (client-go $version): cached at $out"
  echo "$out"
  exit 0
fi
start=$(date +%s)
mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
log "client-go-check (client-go $version): downloading modules"
(cd "$mod" && go mod download)
log "client-go-check: compiling (about 700 packages with the standard library; minutes on a cold build cache)"
if ! (cd "$mod" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -buildvcs=false -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$tmp" .); then
  rm -f "$tmp"
  log "client-go-check: build FAILED"
  exit 1
fi
mv -f "$tmp" "$out"
log "client-go-check: built $out in $(( $(date +%s) - start ))s"
echo "$out"
