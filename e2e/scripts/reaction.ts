// The CellSet reaction benchmark against kube-apiserver 1.35.4 + etcd (issue 30): the driver of
// `pnpm bench -- --only=reaction` (bench/src/lib/cellset-reaction.ts) on the e2e layer's control
// plane, provisioned here on loopback and torn down at the end. Run on demand:
//   pnpm --filter @reconcile-loop/e2e reaction [--out <file.json>]
// It prints the phases and writes the result as JSON (default bench/results/reaction-kube-apiserver.json).
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { measureReaction } from '../../bench/src/lib/cellset-reaction.js';
import { readVersions } from '../src/config.js';
import { ControlPlane } from '../src/index.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: { out: { type: 'string' }, small: { type: 'boolean', default: false } },
});
const out =
  values.out ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'results', 'reaction-kube-apiserver.json');
const cp = await ControlPlane.start({ onProgress: (line) => process.stderr.write(`${line}\n`) });
let code = 0;
try {
  const endpoint = cp.cachedEndpoint;
  const kc = new KubeConfig();
  kc.loadFromString(endpoint.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = 'reaction';
  const small = values.small;
  const result = await measureReaction({
    kubeconfig: endpoint.kubeconfig,
    namespace,
    createNamespace: async () => void (await core.createNamespace({ body: { metadata: { name: namespace } } })),
    knobs: { leaseDurationS: 3, renewDeadlineS: 2, retryPeriodS: 0.5 },
    sets: small ? 4 : 20,
    replicasPerSet: small ? 5 : 10,
    failuresPerPhase: small ? 6 : 30,
    // One failure every 500 ms: each costs about 4 writes (delete, status, create, status), so
    // 2 failures/s stay well inside 20 writes/s; 100 ms measured the limiter's queue, not the reaction.
    intervalMs: 500,
    burst: small ? 4 : 30,
    log: (line) => console.log(line),
  });
  const written = {
    server: `kube-apiserver ${readVersions().kubernetes} + etcd ${readVersions().etcd} (e2e layer, loopback)`,
    date: new Date().toISOString(),
    ...result,
  };
  await writeFile(out, `${JSON.stringify(written, null, 2)}\n`);
  console.log(`wrote ${out}`);
} catch (error) {
  console.error(error);
  code = 1;
} finally {
  await cp.teardown();
}
process.exit(code);
