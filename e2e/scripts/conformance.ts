/**
 * `pnpm --filter @reconcile-loop/e2e conformance`: the raw-API conformance report of
 * @reconcile-loop/testing (its `conformance/` cases), embedded server vs a real kube-apiserver,
 * SAME/DIFF per case and personality. Here, not in testing, because it provisions the control plane.
 *
 *   conformance                                   # provisions etcd + both apiservers from the e2e layer
 *   conformance --kubeconfig KC [--uncached-kubeconfig KC2]   # any cluster (cached; KC2 with --watch-cache=false)
 *
 * Exits 0 when every case is SAME except the marked known differences, 1 otherwise.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ApiServer } from '@reconcile-loop/testing';
import {
  conforms,
  pairAgainst,
  report,
  reportLine,
  runConformance,
  type Pair,
} from '../../packages/testing/conformance/runner.js';
import { accessFromKubeconfig, type Access } from '../../packages/testing/conformance/target.js';
import { ControlPlane } from '../src/index.js';

// `pnpm … conformance -- --kubeconfig KC` forwards the `--`; drop it so both spellings work.
const argv = process.argv.slice(2).filter((a, i) => !(i === 0 && a === '--'));
const { values } = parseArgs({
  args: argv,
  options: { kubeconfig: { type: 'string' }, 'uncached-kubeconfig': { type: 'string' } },
});

const servers: ApiServer[] = [];
let teardown: (() => Promise<void>) | undefined;
let code = 1;
try {
  const real: Array<{ personality: 'cached' | 'uncached'; access: Access }> = [];
  if (values.kubeconfig !== undefined) {
    real.push({ personality: 'cached', access: accessFromKubeconfig(readFileSync(values.kubeconfig, 'utf8')) });
    if (values['uncached-kubeconfig'] !== undefined)
      real.push({ personality: 'uncached', access: accessFromKubeconfig(readFileSync(values['uncached-kubeconfig'], 'utf8')) });
  } else {
    process.stderr.write('starting etcd and two kube-apiservers (e2e layer)…\n');
    const cp = await ControlPlane.start({ onProgress: (l: string) => process.stderr.write(`${l}\n`) });
    teardown = () => cp.teardown();
    real.push({ personality: 'cached', access: accessFromKubeconfig(cp.cachedEndpoint.kubeconfig) });
    real.push({ personality: 'uncached', access: accessFromKubeconfig(cp.uncachedEndpoint.kubeconfig) });
  }
  const pairs: Pair[] = [];
  for (const r of real) {
    const { pair, server } = await pairAgainst(r.personality, r.access);
    servers.push(server);
    pairs.push(pair);
  }
  const results = await runConformance(pairs, undefined, (r) => process.stdout.write(`${reportLine(r)}\n`));
  process.stdout.write(`\n${report(results).split('\n').slice(results.length).join('\n')}\n`);
  code = conforms(results) ? 0 : 1;
} catch (e) {
  process.stderr.write(`conformance: ${(e as Error).stack ?? String(e)}\n`);
} finally {
  await Promise.allSettled(servers.map((s) => s.close()));
  await teardown?.();
}
process.exit(code);
