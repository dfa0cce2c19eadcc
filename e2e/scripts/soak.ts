// `pnpm soak`: the CellSet soak on the e2e layer's kube-apiserver (provisioned on loopback here,
// torn down at the end). Flags: --start <n> (the RNG; the same value replays the same actions),
// --actions <n> (default 300), --minutes <m> (default 5), --kills <n> (3), --stops <n> (1).
// Exit 0 when every invariant held (listed in e2e/README.md, "Soak"), 1 otherwise.
import { parseArgs } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { ControlPlane } from '../src/index.js';
import { runSoak } from './soak-run.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'), // `pnpm soak -- --actions 50` passes the `--` on
  options: {
    start: { type: 'string', default: '30' },
    actions: { type: 'string', default: '300' },
    minutes: { type: 'string', default: '5' },
    kills: { type: 'string', default: '3' },
    stops: { type: 'string', default: '1' },
  },
});
const cp = await ControlPlane.start({ onProgress: (line) => process.stderr.write(`${line}\n`) });
let code = 0;
try {
  const kc = new KubeConfig();
  kc.loadFromString(cp.cachedEndpoint.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const report = await runSoak({
    kubeconfig: cp.cachedEndpoint.kubeconfig,
    namespace: 'soak',
    createNamespace: async () => void (await core.createNamespace({ body: { metadata: { name: 'soak' } } })),
    start: Number(values.start),
    actions: Number(values.actions),
    durationMs: Number(values.minutes) * 60_000,
    kills: Number(values.kills),
    stops: Number(values.stops),
    stopMs: 5_000,
    settleMs: 60_000,
    log: (line) => console.log(line),
  });
  console.log(JSON.stringify(report, null, 2));
  code = report.violations.length === 0 ? 0 : 1;
  console.log(code === 0 ? 'soak: every invariant held' : `soak: ${report.violations.length} violations`);
} catch (error) {
  console.error(error);
  code = 1;
} finally {
  await cp.teardown();
}
process.exit(code);
