// Starts the e2e control plane by hand and keeps it up until Ctrl-C: for poking at it with
// kubectl, or for running the suite against it through RECONCILE_LOOP_E2E_KUBECONFIG.
import { ControlPlane } from '../src/index.js';

const cp = await ControlPlane.start();
process.stdout.write(
  [
    `etcd            ${cp.etcd.clientUrl}`,
    `kube-apiserver  ${cp.cached.server}  (watch cache on)   kubeconfig ${cp.cachedEndpoint.kubeconfigPath}`,
    `kube-apiserver  ${cp.uncached.server}  (--watch-cache=false)  kubeconfig ${cp.uncachedEndpoint.kubeconfigPath}`,
    `logs            ${Object.values(cp.logs).join(' ')}`,
    '',
    `RECONCILE_LOOP_E2E_KUBECONFIG=${cp.cachedEndpoint.kubeconfigPath} pnpm e2e`,
    'Ctrl-C stops everything.',
    '',
  ].join('\n'),
);
let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  void cp.teardown().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setInterval(() => undefined, 1 << 30);
