/**
 * E2e harness: builds kube-apiserver and etcd from the Go module proxy, runs them on
 * loopback, and gives tests typed control over them. Imports nothing from packages/*.
 * Vitest hooks live in ./environment.js (not re-exported: importing vitest outside a run fails).
 */
export { ENV, binaryDir, cacheRoot, readAllVersions, readVersions, type Versions } from './config.js';
export { ensureBinaries, probeToolchain, ProvisionError, which, type Binaries, type ToolchainStatus } from './toolchain.js';
export { freePort } from './ports.js';
export { ManagedProcess, ManagedService, ProcessExitedError, type ProcessSpec } from './managed-process.js';
export { Etcd, EtcdError, type CompactResult } from './etcd.js';
export { featureGateArgs, KubeApiserver, probe, type KubeApiserverOptions, type SharedSecrets } from './kube-apiserver.js';
export { renderKubeconfig, caFromServingBundle, type ClusterAccess } from './kubeconfig.js';
export { TcpProxy } from './tcp-proxy.js';
export {
  ControlPlane,
  externalCluster,
  type ControlPlaneOptions,
  type Endpoint,
  type ExternalCluster,
  type ProxiedEndpoint,
} from './control-plane.js';
export { KubeletEmulator, podManifest } from './kubelet.js';
export { reapStaleRuns } from './registry.js';
export {
  eventually,
  uniqueNamespace,
  withToken,
  forbiddenListNamespace,
  poisonCrd,
  storeMatchesFreshList,
  type ForbiddenListNamespace,
  type PoisonCrd,
  type CustomObject,
  type ListedObject,
} from './fixtures.js';
export { clientGoCheck, runClientGoCheck, type ClientGoReport } from './clients.js';
export { fnv1a64, hashInRanges, type HashRange } from './shard-oracle.js';
export { readJsonLines } from './json-lines.js';
export { spawnTsxScript } from './tsx-script.js';
