# Sourced by build.sh and bump.sh: resolves a Kubernetes line from versions.env.
# shellcheck shell=bash
# shellcheck source=versions.env
source "$here/versions.env"

# Lines newest first, as an array.
IFS=',' read -r -a K8S_LINES <<<"$KUBERNETES_LINES"

# resolve_line <line | version | "">: sets LINE, KUBERNETES_VERSION, STAGING_VERSION, ETCD_VERSION
# and LINE_DIR. Empty means RECONCILE_LOOP_K8S, and when that is unset too the newest line.
resolve_line() {
  local want="${1:-${RECONCILE_LOOP_K8S:-}}" l key
  [[ -n "$want" ]] || want="${K8S_LINES[0]}"
  LINE=""
  for l in "${K8S_LINES[@]}"; do
    key="${l//./_}"
    local v="KUBERNETES_VERSION_$key"
    if [[ "$want" == "$l" || "$want" == "v$l" || "$want" == "${!v:-}" ]]; then LINE="$l"; break; fi
  done
  if [[ -z "$LINE" ]]; then
    echo "e2e/provision: Kubernetes '$want' is not a pinned line; pinned: ${KUBERNETES_LINES//,/, } (versions.env)" >&2
    return 2
  fi
  key="${LINE//./_}"
  local kv="KUBERNETES_VERSION_$key" sv="STAGING_VERSION_$key" ev="ETCD_VERSION_$key"
  KUBERNETES_VERSION="${!kv:-}" STAGING_VERSION="${!sv:-}" ETCD_VERSION="${!ev:-}"
  if [[ -z "$KUBERNETES_VERSION" || -z "$STAGING_VERSION" || -z "$ETCD_VERSION" ]]; then
    echo "e2e/provision/versions.env: line $LINE needs $kv, $sv and $ev" >&2
    return 2
  fi
  LINE_DIR="$here/k8s-$LINE"
}
