#!/usr/bin/env bash
# Every test, as a matrix of cells (Node version x @kubernetes/client-node major x Kubernetes line of
# the e2e layer x layer), two at a time on CI's two cores. Called by `./dev test` (and so by
# .ci/run). Each cell's output goes to .turbo/matrix/<cell>.log; the run prints one line per cell as it finishes
#   cell node=26.12.1 client-node=2 layer=unit+integration: passed (48 s)
# then a summary in the cells' fixed order, the test counts of every vitest cell, and last
#   cells: N passed, N failed
# and exits non-zero when any cell failed. The layout and the reason for each cell: ALIGNMENT.md
# (Support) and the README's support table.
#
# Env: RECONCILE_LOOP_MATRIX_JOBS (default 2) cells at once besides the e2e cells' own lane; RECONCILE_LOOP_CELLS=<regex> runs only
# the cells whose id matches (e.g. 'n26' for the primary runtime), their dependencies included.
set -euo pipefail
export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1
# "Every test" means the e2e layer too: without Go and without cached binaries it fails, never skips.
export RECONCILE_LOOP_E2E_REQUIRE="${RECONCILE_LOOP_E2E_REQUIRE:-1}"
cd "$(dirname "$0")/.."
# shellcheck source=runtime.sh
. scripts/runtime.sh
rl_use_node "$NODE_PRIMARY"

JOBS="${RECONCILE_LOOP_MATRIX_JOBS:-2}"
ONLY="${RECONCILE_LOOP_CELLS:-}"
OUT=.turbo/matrix
rm -rf "$OUT"
mkdir -p "$OUT"
TARBALLS="$(mktemp -d "${TMPDIR:-/tmp}/rl-tarballs-XXXXXX")"
trap 'rm -rf "$TARBALLS"' EXIT
started_at=$(date +%s)

step() { printf '\n=== %s\n' "$*"; }
major() { echo "${1%%.*}"; }

step "runtimes: Node $NODE_MATRIX from the npm registry (cached in $RL_NODE_CACHE)"
declare -A PATH_FOR
for v in $NODE_MATRIX; do
  PATH_FOR[$v]="$(rl_path_for "$v")"
  echo "node $v: $(PATH="${PATH_FOR[$v]}" node --version), npm $(PATH="${PATH_FOR[$v]}" npm --version), pnpm $(PATH="${PATH_FOR[$v]}" pnpm --version)"
done
if [ -f packages/testing/scripts/ensure-kubectl.sh ]; then
  step "kubectl (Debian's kubernetes-client) for the embedded-apiserver tests"
  bash packages/testing/scripts/ensure-kubectl.sh
fi
# kube-apiserver + etcd of each Kubernetes line are built by cells of their own (k8s-<line>, below), so
# a fresh machine's Go builds overlap the other cells instead of delaying all of them.
K8S_LINES=()
if [ -f e2e/provision/build.sh ]; then
  read -r -a K8S_LINES <<<"$(bash e2e/provision/build.sh --lines)"
  step "Kubernetes lines for the e2e layer: ${K8S_LINES[*]} (newest first; each built once, cached by version)"
  for line in "${K8S_LINES[@]}"; do echo "$line: $(bash e2e/provision/build.sh --print-dir "$line")"; done
  [ ! -f e2e/clients/build.sh ] || echo "client-go-check: $(bash e2e/clients/build.sh --print-path)"
fi

# --- the cells ---------------------------------------------------------------------------------
# id | node | client-node major | layer | cells it waits for (space-separated) | command (run by bash in
# the repo root) | Kubernetes line of the e2e layer (optional; exported as RECONCILE_LOOP_K8S)
IDS=()
declare -A C_NODE C_CN C_LAYER C_AFTER C_CMD C_K8S C_GROUP
cell() {
  IDS+=("$1"); C_NODE[$1]="$2"; C_CN[$1]="$3"; C_LAYER[$1]="$4"; C_AFTER[$1]="$5"; C_CMD[$1]="$6"; C_K8S[$1]="${7:-}"
}
# exclusive <group> <id>...: at most one cell of the group runs at a time (the first ready one in the
# listed order). Unlike waiting for a cell, a subset run (RECONCILE_LOOP_CELLS) does not pull the
# others of the group in.
exclusive() { local g="$1" id; shift; for id in "$@"; do C_GROUP[$id]="$g"; done; }
# waiting <id>...: cells in the JOBS slots that mostly wait (on the network, a loopback registry,
# child processes) rather than compute: the plain-npm installs of the pack smoke and the release
# rehearsal. When a slot frees, the scheduler starts a ready cell of the other kind than the one still
# running if there is one, so a waiting cell runs beside a computing one (on a fresh machine: beside
# the Go builds); two waiting cells side by side left a core idle. Unmarked cells compute. (The e2e
# cells wait too; they have a lane of their own, see `lane`.) Two mechanisms, not one: a lane for the
# waiting cells would run a fourth cell beside the two slots and the control plane, and the e2e cells as
# waiting cells would hold a slot again (the 46-min run `lane` describes).
declare -A C_WAITS
waiting() { local id; for id in "$@"; do C_WAITS[$id]=1; done; }
vitest_cmd() { echo "pnpm exec vitest run --reporter=default --reporter=json --outputFile.json=$OUT/$1.json ${*:2}"; }
# Which projects exercise @kubernetes/client-node: the reflector (its only runtime user), the loop and
# the testing package (their embedded-apiserver integration and client-node's own informer), the
# k8s-types parsing of client-node's class instances, the demo, and the runtime check.
CN_PROJECTS="--project reflector --project loop --project testing --project k8s-types --project examples --project runtime-check"
# kube-client (another change) takes auth from a client-node KubeConfig too.
[ ! -f packages/kube-client/package.json ] || CN_PROJECTS+=" --project kube-client"
# The CellSet example (the main job) loads its kubeconfig and YAML manifests with client-node.
[ ! -f examples/cellset/package.json ] || CN_PROJECTS+=" --project example-cellset"
# The manager builds its one client from a client-node KubeConfig.
[ ! -f packages/manager/package.json ] || CN_PROJECTS+=" --project manager"
# The endpoints example (the selector shape) loads its kubeconfig with client-node, through the manager.
[ ! -f examples/endpoints/package.json ] || CN_PROJECTS+=" --project example-endpoints"
P="$NODE_PRIMARY"
n26=26.12.1 n24=24.22.3 n22=22.19.0
for v in $n26 $n24 $n22; do [[ " $NODE_MATRIX " == *" $v "* ]] || rl_die "test-all.sh names Node $v, which runtimes.env does not pin"; done

# The Kubernetes lines (e2e/provision/versions.env, newest first). Each line's kube-apiserver + etcd is
# a Go build of ~2,600 packages (minutes on two cores, see e2e/README.md), one line at a time: the
# lines share almost no compiled package (different k8s.io/* and etcd versions), so two at once would
# only split the cores. They come first in the list, so the newest line's build (which gates the full
# e2e layer) starts at once and the older lines' builds overlap the unit, integration and pack cells.
NEWEST="${K8S_LINES[0]:-}"
# The newest line's cell also builds client-go-check (e2e/clients/client-go, client-go of that line,
# for e2e/test/clients.test.ts) right after kube-apiserver: it compiles the same client-go,
# apimachinery and golang.org/x packages with the same flags, so from that build cache it is mostly a
# link (seconds), where a cell of its own would compile them again beside the apiserver build.
for line in "${K8S_LINES[@]}"; do
  build_cmd="bash e2e/provision/build.sh $line"
  if [ "$line" = "${K8S_LINES[0]}" ] && [ -f e2e/clients/build.sh ]; then build_cmd+=" && bash e2e/clients/build.sh"; fi
  cell "k8s-$line" "$P" 2 "kube-apiserver+etcd-build" "" "$build_cmd" "$line"
  exclusive go-build "k8s-$line"
done
cell build      "$P"   2 "format+lint+typecheck+build+api+semver+layers+one-home+pack" ""      "pnpm format:check && pnpm lint:code && pnpm exec turbo run typecheck build lint --output-logs=errors-only && node scripts/api-report.mjs --check && node scripts/semver-check.mjs && node scripts/layering-check.mjs && node scripts/one-home.mjs && node scripts/pack-smoke.mjs --pack $TARBALLS"
# The heavy e2e cells (etcd + two kube-apiservers each) never overlap (exclusive group control-plane);
# each waits for its line's build. The newest line runs the whole e2e layer (and, on Node 22 with
# client-node 1.x, the shared scenarios).
if [ -n "$NEWEST" ]; then
  cell e2e-n26-c2 "$n26" 2 "e2e"                     "k8s-$NEWEST" "$(vitest_cmd e2e-n26-c2 --project e2e --project runtime-check)" "$NEWEST"
fi
cell ui-n26-c2  "$n26" 2 "unit+integration"          ""      "$(vitest_cmd ui-n26-c2 --project "'!e2e'")"
cell ui-n24-c2  "$n24" 2 "unit+integration"          ""      "$(vitest_cmd ui-n24-c2 --project "'!e2e'")"
cell ui-n22-c2  "$n22" 2 "unit+integration"          ""      "$(vitest_cmd ui-n22-c2 --project "'!e2e'")"
if [ -n "$NEWEST" ]; then
  cell e2e-n22-c1 "$n22" 1 "e2e-reflector-scenarios" "k8s-$NEWEST" "$(vitest_cmd e2e-n22-c1 --project e2e --project runtime-check scenarios.test runtime.test)" "$NEWEST"
  exclusive control-plane e2e-n26-c2 e2e-n22-c1
fi
# The older lines run what a version changes: the reflector scenarios, the conformance suite (embedded
# apiserver vs that kube-apiserver), the CellSet kill -9 test and the sharded-LIST gate facts.
for line in "${K8S_LINES[@]:1}"; do
  id="e2e-k${line//./}-n26-c2"
  cell "$id" "$n26" 2 "e2e-older-line" "k8s-$line" "$(vitest_cmd "$id" --project e2e --project runtime-check scenarios.test conformance.test cellset.test sharded-list.test runtime.test)" "$line"
  exclusive control-plane "$id"
done
# client-node 1.x: the projects that use it run on the floor Node only, the combination where an older
# client-node meets the oldest runtime. Node 24 and 26 meet 1.x in their pack-smoke cells (the packed
# reflector syncing and a controller converging with client-node 1.4.x, as a user installs them). The
# two other full runs cost ~200 s of two-core CPU each for code that does not change with the Node
# version (kube-client reads a KubeConfig's auth through two structural calls), and they were the
# cheapest way to bring a fresh machine's run under 45 minutes (e2e/README.md, "Fresh machine").
cell int-n22-c1 "$n22" 1 "client-node-projects"      ""      "$(vitest_cmd int-n22-c1 $CN_PROJECTS)"
cell pack-n26   "$n26" 2 "pack-smoke"                build   "node scripts/pack-smoke.mjs --tarballs $TARBALLS"
cell pack-n24   "$n24" 2 "pack-smoke"                build   "node scripts/pack-smoke.mjs --tarballs $TARBALLS"
cell pack-n22   "$n22" 2 "pack-smoke"                build   "node scripts/pack-smoke.mjs --tarballs $TARBALLS"
cell types-n26  "$n26" 2 "consumer-types"            build   "node scripts/consumer-types.mjs --tarballs $TARBALLS"
# The release rehearsal (issue 25): a loopback Verdaccio, `changeset version` + `changeset publish` of a
# throwaway copy of the built workspace, every package installed by name on Node 22/24/26 with its
# README examples run, the single-package case and the fault cases. It packs from the versioned copy
# (pnpm publish), not from $TARBALLS: those are 0.0.0 with workspace ranges of the unversioned tree.
cell release-n26 "$n26" 2 "release-rehearsal"        build   "node scripts/release.mjs --rehearse --report $OUT/release-n26.json"
if [ -f bench/package.json ]; then
  # The memory gate (issue 15): retained heap per cached pod and the initial-sync peaks against
  # bench/memory-baseline.json, failing above 110 %; timing is never pass/fail.
  gate="true"
  [ ! -f bench/src/memory-gate.ts ] || gate="pnpm --filter @reconcile-loop/bench memory-gate"
  cell bench-n26 "$n26" 2 "bench-smoke+memory-gate"  ""      "pnpm --filter @reconcile-loop/bench bench:smoke && $gate"
fi

waiting pack-n26 pack-n24 pack-n22 release-n26

# RECONCILE_LOOP_CELLS: keep matching cells and what they wait for.
if [ -n "$ONLY" ]; then
  declare -A KEEP
  keep() { # a cell and, transitively, what it waits for
    [ -z "${KEEP[$1]:-}" ] || return 0
    KEEP[$1]=1
    local dep
    for dep in ${C_AFTER[$1]}; do keep "$dep"; done
  }
  for id in "${IDS[@]}"; do
    if [[ "$id" =~ $ONLY ]]; then keep "$id"; fi
  done
  kept=()
  for id in "${IDS[@]}"; do [ -z "${KEEP[$id]:-}" ] || kept+=("$id"); done
  IDS=("${kept[@]}")
fi

label() { echo "cell node=$(major "${C_NODE[$1]}") client-node=${C_CN[$1]}${C_K8S[$1]:+ k8s=${C_K8S[$1]}} layer=${C_LAYER[$1]}"; }

# --- the scheduler -----------------------------------------------------------------------------
declare -A STATE   # pending | running | passed | failed
declare -A SECS
for id in "${IDS[@]}"; do STATE[$id]=pending; done

# lane <id>: `control-plane` for the e2e cells (the exclusive group of that name: one at a time,
# beside the JOBS slots and not counted in them), `slots` for the rest. An e2e cell mostly waits on
# its control plane and on Lease timings (the older-line cell measured 54 s of CPU in 373 s; the
# newest line's ~600 s cell is mostly the sharded and leader-election replicas' Lease waits), so
# holding one of two slots left a core idle: a fresh machine's run took 46 min with the e2e cells
# in the slots (e2e/README.md, "The whole ./dev test").
lane() { if [ "${C_GROUP[$1]:-}" = control-plane ]; then echo control-plane; else echo slots; fi; }

start_cell() {
  local id="$1"
  STATE[$id]=running
  (
    export PATH="${PATH_FOR[${C_NODE[$id]}]}"
    export RECONCILE_LOOP_CLIENT_NODE="${C_CN[$id]}" RECONCILE_LOOP_EXPECT_NODE="${C_NODE[$id]}"
    if [ -n "${C_K8S[$id]}" ]; then export RECONCILE_LOOP_K8S="${C_K8S[$id]}"; fi
    t0=$(date +%s)
    rc=0
    # The control plane's lane runs at the normal priority, every other cell at nice 10: the e2e
    # layer's Lease timings and kill -9/SIGSTOP scenarios get the CPU the moment they need it, and
    # the computing cells take the rest (see `lane`).
    nice=(nice -n 10)
    if [ "$(lane "$id")" = control-plane ]; then nice=(); fi
    { echo "# $(label "$id") (node ${C_NODE[$id]})"; echo "# ${C_CMD[$id]}"; "${nice[@]}" bash -c "${C_CMD[$id]}"; } >"$OUT/$id.log" 2>&1 || rc=$?
    echo "$rc $(( $(date +%s) - t0 ))" >"$OUT/$id.status"
  ) &
}

finish_done() {
  local id rc secs
  for id in "${IDS[@]}"; do
    [ "${STATE[$id]}" = running ] && [ -f "$OUT/$id.status" ] || continue
    read -r rc secs <"$OUT/$id.status"
    SECS[$id]=$secs
    if [ "$rc" = 0 ]; then STATE[$id]=passed; else STATE[$id]=failed; fi
    echo "$(label "$id"): ${STATE[$id]} (${secs} s)"
  done
}

step "cells, $JOBS at a time (logs in $OUT/)"
while :; do
  finish_done
  running=0 active=0 pending=0 # running: in the JOBS slots; active: in any lane
  for id in "${IDS[@]}"; do
    case "${STATE[$id]}" in
      running)
        active=$((active + 1))
        if [ "$(lane "$id")" = slots ]; then running=$((running + 1)); fi
        ;;
      pending) pending=$((pending + 1)) ;;
    esac
  done
  [ "$active" -eq 0 ] && [ "$pending" -eq 0 ] && break
  # Start ready cells in the listed order, in the slots those of the other kind than a running cell
  # first (see `waiting`); a cell whose dependency failed fails without running.
  prefer=""
  if [ "$running" -gt 0 ]; then
    prefer=waits
    for id in "${IDS[@]}"; do
      if [ "${STATE[$id]}" = running ] && [ "$(lane "$id")" = slots ] && [ -n "${C_WAITS[$id]:-}" ]; then prefer=computes; fi
    done
  fi
  order=()
  for pass in first second; do
    for id in "${IDS[@]}"; do
      if [ -n "${C_WAITS[$id]:-}" ]; then kind=waits; else kind=computes; fi
      if [ "$pass" = first ] && [ "$kind" = "$prefer" ]; then order+=("$id"); fi
      if [ "$pass" = second ] && [ "$kind" != "$prefer" ]; then order+=("$id"); fi
    done
  done
  for id in "${order[@]}"; do
    [ "${STATE[$id]}" = pending ] || continue
    in_slots=0
    if [ "$(lane "$id")" = slots ]; then in_slots=1; fi
    if [ "$in_slots" = 1 ] && [ "$running" -ge "$JOBS" ]; then continue; fi
    ready=1 blocked=""
    for dep in ${C_AFTER[$id]}; do
      [ -n "${STATE[$dep]:-}" ] || continue # filtered out by RECONCILE_LOOP_CELLS
      case "${STATE[$dep]}" in
        failed) blocked="$dep" ;;
        passed) ;;
        *) ready=0 ;;
      esac
    done
    if [ -n "$blocked" ]; then
      STATE[$id]=failed; SECS[$id]=0; echo "$(label "$id"): failed (not run: $blocked failed)"; continue
    fi
    [ "$ready" = 1 ] || continue
    if [ -n "${C_GROUP[$id]:-}" ]; then
      busy=0
      for other in "${IDS[@]}"; do
        if [ "${STATE[$other]}" = running ] && [ "${C_GROUP[$other]:-}" = "${C_GROUP[$id]}" ]; then busy=1; fi
      done
      [ "$busy" = 0 ] || continue
    fi
    start_cell "$id"
    running=$((running + in_slots))
  done
  sleep 1
done
wait

# --- the summary -------------------------------------------------------------------------------
step "summary ($(( $(date +%s) - started_at )) s in all)"
npassed=0 nfailed=0
for id in "${IDS[@]}"; do
  echo "$(label "$id"): ${STATE[$id]} (${SECS[$id]:-0} s)"
  if [ "${STATE[$id]}" = passed ]; then npassed=$((npassed + 1)); else nfailed=$((nfailed + 1)); fi
done
for id in "${IDS[@]}"; do
  if [ "${STATE[$id]}" = failed ] && [ -f "$OUT/$id.log" ]; then
    step "log of the failed cell $id (last 120 lines; all of it in $OUT/$id.log)"
    tail -n 120 "$OUT/$id.log"
  fi
done
# What a cell ran but could not yet prove (e.g. a check waiting for a flag another change adds).
if grep -hs '^NOTE' "$OUT"/*.log | sort -u | grep -q .; then
  step "notes from the cells"
  grep -hs '^NOTE' "$OUT"/*.log | sort -u
fi
echo
node -e '
const fs = require("node:fs");
let p = 0, f = 0, s = 0, n = 0;
for (const file of fs.readdirSync(process.argv[1]).filter((x) => x.endsWith(".json"))) {
  const r = JSON.parse(fs.readFileSync(`${process.argv[1]}/${file}`, "utf8"));
  p += r.numPassedTests; f += r.numFailedTests; s += r.numPendingTests + r.numTodoTests; n++;
}
console.log(`tests: ${p} passed, ${f} failed, ${s} skipped (over ${n} vitest cells)`);
' "$OUT"
echo "cells: $npassed passed, $nfailed failed"
# ALIGNMENT.md names a test for every decision: on a full run each named tag must title a passing test.
alignment=0
if [ -z "$ONLY" ]; then node scripts/alignment-check.mjs "$OUT" ALIGNMENT.md || alignment=1; fi
[ "$nfailed" -eq 0 ] && [ "$alignment" -eq 0 ]
