#!/usr/bin/env bash
# Every test, in the order a failure is cheapest to read. Called by `./dev test` (and so by .ci/run).
set -euo pipefail
export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

if [ -f packages/testing/scripts/ensure-kubectl.sh ]; then
  step "kubectl (Debian's kubernetes-client) for the embedded-apiserver tests"
  bash packages/testing/scripts/ensure-kubectl.sh
fi
if [ -f e2e/provision/build.sh ]; then
  step "kube-apiserver + etcd for the e2e layer (cached by version; minutes on first run)"
  bash e2e/provision/build.sh
fi

step "typecheck, build, package lint (publint --strict, attw)"
pnpm exec turbo run typecheck build lint --output-logs=errors-only

step "tests: unit, integration (embedded apiserver), e2e (real apiserver)"
mkdir -p .turbo
pnpm exec vitest run --reporter=default --reporter=json --outputFile.json=.turbo/vitest-results.json

step "pack-and-install smoke test"
node scripts/pack-smoke.mjs

if [ -f bench/package.json ]; then
  step "benchmark smoke (tiny sizes; never a pass/fail on time)"
  pnpm --filter @reconcile-loop/bench bench:smoke
fi

node -e '
const r = require("./.turbo/vitest-results.json");
console.log(`\ntests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
process.exit(r.numFailedTests > 0 ? 1 : 0);
'
