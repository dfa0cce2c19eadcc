import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENV, flag } from './config.js';
import { Etcd } from './etcd.js';
import { KubeApiserver, type SharedSecrets } from './kube-apiserver.js';
import { renderKubeconfig, type ClusterAccess } from './kubeconfig.js';
import type { ManagedService } from './managed-process.js';
import { forgetRunDir, keepChildren, reapStaleRuns } from './registry.js';
import { TcpProxy } from './tcp-proxy.js';
import { ensureBinaries, type Binaries } from './toolchain.js';

/** One way to reach an apiserver: its URL and a kubeconfig for it (YAML string and file). */
export interface Endpoint {
  readonly name: string;
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly kubeconfig: string;
}

/** An endpoint reached through a {@link TcpProxy} that a test can stall. */
export interface ProxiedEndpoint extends Endpoint {
  readonly proxy: TcpProxy;
}

function writeEndpoint(dir: string, name: string, access: ClusterAccess): Endpoint {
  const kubeconfig = renderKubeconfig(name, access);
  const kubeconfigPath = join(dir, `${name}.kubeconfig`);
  writeFileSync(kubeconfigPath, kubeconfig, { mode: 0o600 });
  return { name, server: access.server, kubeconfigPath, kubeconfig };
}

function makeSecrets(dir: string): SharedSecrets {
  const token = randomBytes(24).toString('hex');
  const tokenFile = join(dir, 'tokens.csv');
  // token,user,uid,"groups": system:masters is bound to cluster-admin and bypasses RBAC.
  writeFileSync(tokenFile, `${token},e2e-admin,e2e-admin-uid,"system:masters"\n`, { mode: 0o600 });
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  const serviceAccountKeyFile = join(dir, 'sa.key');
  const serviceAccountPublicKeyFile = join(dir, 'sa.pub');
  writeFileSync(serviceAccountKeyFile, privateKey, { mode: 0o600 });
  writeFileSync(serviceAccountPublicKeyFile, publicKey);
  return { token, tokenFile, serviceAccountKeyFile, serviceAccountPublicKeyFile };
}

/** Options of {@link ControlPlane.start}. */
export interface ControlPlaneOptions {
  /** Prebuilt binaries; default: {@link ensureBinaries} (builds on first use). */
  readonly binaries?: Binaries;
  /** Progress lines of provisioning; default stderr. */
  readonly onProgress?: (line: string) => void;
  /** Keep everything running after {@link ControlPlane.teardown}; default RECONCILE_LOOP_E2E_KEEP. */
  readonly keep?: boolean;
}

/**
 * etcd plus two kube-apiservers on it: `cached` (watch cache on, like a real cluster) and
 * `uncached` (`--watch-cache=false`), because only without the cache does a compacted
 * resourceVersion give a real 410 to a live cursor. Every process can be stopped, killed and
 * restarted; restarts keep ports, data and certificates.
 */
export class ControlPlane {
  readonly runDir: string;
  readonly binaries: Binaries;
  readonly etcd: Etcd;
  readonly cached: KubeApiserver;
  readonly uncached: KubeApiserver;
  /** Kubeconfig of the cached apiserver. */
  readonly cachedEndpoint: Endpoint;
  /** Kubeconfig of the uncached apiserver. */
  readonly uncachedEndpoint: Endpoint;
  readonly #keep: boolean;
  readonly #secrets: SharedSecrets;
  readonly #proxies = new Set<TcpProxy>();
  readonly #extra = new Set<KubeApiserver>();
  #tornDown = false;

  private constructor(init: {
    runDir: string;
    binaries: Binaries;
    etcd: Etcd;
    cached: KubeApiserver;
    uncached: KubeApiserver;
    keep: boolean;
    secrets: SharedSecrets;
  }) {
    this.#secrets = init.secrets;
    this.runDir = init.runDir;
    this.binaries = init.binaries;
    this.etcd = init.etcd;
    this.cached = init.cached;
    this.uncached = init.uncached;
    this.#keep = init.keep;
    this.cachedEndpoint = writeEndpoint(init.runDir, 'e2e-cached', init.cached.access);
    this.uncachedEndpoint = writeEndpoint(init.runDir, 'e2e-uncached', init.uncached.access);
  }

  /** Builds the binaries if needed, then starts etcd and both apiservers and waits for /readyz. */
  static async start(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
    reapStaleRuns();
    const binaries = options.binaries ?? (await ensureBinaries(options.onProgress ? { onProgress: options.onProgress } : {}));
    const runDir = mkdtempSync(join(tmpdir(), 'reconcile-loop-e2e-'));
    mkdirSync(join(runDir, 'logs'));
    const secrets = makeSecrets(runDir);
    const started: ManagedService[] = [];
    try {
      const etcd = await Etcd.start({ binary: binaries.etcd, runDir });
      started.push(etcd);
      const common = { binary: binaries.kubeApiserver, runDir, etcdUrl: etcd.clientUrl, secrets };
      const [cached, uncached] = await Promise.all([
        KubeApiserver.start({ ...common, name: 'kube-apiserver', watchCache: true }).then((a) => (started.push(a), a)),
        // The cached apiserver keeps the identity Lease; a second holder on this host would fight it.
        KubeApiserver.start({ ...common, name: 'kube-apiserver-uncached', watchCache: false, identity: false }).then(
          (a) => (started.push(a), a),
        ),
      ]);
      return new ControlPlane({ runDir, binaries, etcd, cached, uncached, keep: options.keep ?? flag(ENV.keep), secrets });
    } catch (error) {
      await Promise.allSettled(started.reverse().map((p) => p.stop()));
      // Keep the logs of a failed start; they are the only clue.
      forgetRunDir(runDir);
      if (error instanceof Error) error.message += `\n(logs kept in ${join(runDir, 'logs')})`;
      throw error;
    }
  }

  /**
   * A TCP proxy in front of `target` (default the cached apiserver) with its own kubeconfig;
   * closed on teardown.
   */
  async proxy(target: KubeApiserver = this.cached): Promise<ProxiedEndpoint> {
    const proxy = await TcpProxy.start(target.port);
    this.#proxies.add(proxy);
    const endpoint = writeEndpoint(this.runDir, `${target.name}-proxy-${proxy.port}`, { ...target.access, server: proxy.server });
    return { ...endpoint, proxy };
  }

  /**
   * One more kube-apiserver on the same etcd, with the same token, plus `extraArgs` (e.g.
   * `--feature-gates=WatchList=false`) and its own kubeconfig; stopped on teardown.
   */
  async extraApiserver(name: string, extraArgs: readonly string[], watchCache = true): Promise<Endpoint> {
    const apiserver = await KubeApiserver.start({
      binary: this.binaries.kubeApiserver,
      runDir: this.runDir,
      etcdUrl: this.etcd.clientUrl,
      secrets: this.#secrets,
      name,
      watchCache,
      identity: false,
      extraArgs,
    });
    this.#extra.add(apiserver);
    return writeEndpoint(this.runDir, name, apiserver.access);
  }

  /** Log file paths by process name. */
  get logs(): Record<string, string> {
    return Object.fromEntries(
      [this.etcd.process, this.cached.process, this.uncached.process].map((p) => [p.spec.name, p.spec.logFile]),
    );
  }

  /**
   * Ends every process and removes the run directory; with keep, leaves all running and
   * prints how to reach it. Idempotent.
   */
  async teardown(): Promise<void> {
    if (this.#tornDown) return;
    this.#tornDown = true;
    await Promise.allSettled([...this.#proxies].map((p) => p.close()));
    if (this.#keep) {
      const pids = [
        this.etcd.process.pid,
        this.cached.process.pid,
        this.uncached.process.pid,
        ...[...this.#extra].map((a) => a.process.pid),
      ].filter((p) => p !== undefined);
      keepChildren(pids, this.runDir);
      process.stderr.write(
        [
          '',
          `[e2e] ${ENV.keep}=1: the control plane stays up.`,
          `[e2e]   kubectl --kubeconfig ${this.cachedEndpoint.kubeconfigPath} get pods -A     (watch cache on)`,
          `[e2e]   kubectl --kubeconfig ${this.uncachedEndpoint.kubeconfigPath} get pods -A   (--watch-cache=false)`,
          `[e2e]   etcd: ${this.etcd.clientUrl}   logs: ${join(this.runDir, 'logs')}`,
          `[e2e]   reuse it: ${ENV.kubeconfig}=${this.cachedEndpoint.kubeconfigPath} pnpm e2e`,
          `[e2e]   end it:   kill ${pids.join(' ')} && rm -rf ${this.runDir}`,
          '',
        ].join('\n'),
      );
      return;
    }
    await Promise.allSettled([this.cached.stop(), this.uncached.stop(), ...[...this.#extra].map((a) => a.stop())]);
    await this.etcd.stop();
    rmSync(this.runDir, { recursive: true, force: true });
    forgetRunDir(this.runDir);
  }
}

/** A cluster this harness did not start, reached through RECONCILE_LOOP_E2E_KUBECONFIG. */
export interface ExternalCluster {
  readonly endpoint: Endpoint;
}

/** Reads the kubeconfig named by RECONCILE_LOOP_E2E_KUBECONFIG, or undefined when unset. */
export function externalCluster(env: NodeJS.ProcessEnv = process.env): ExternalCluster | undefined {
  const path = env[ENV.kubeconfig];
  if (path === undefined || path === '') return undefined;
  const kubeconfig = readFileSync(path, 'utf8');
  const server = /server:\s*(\S+)/.exec(kubeconfig)?.[1] ?? '(see kubeconfig)';
  return { endpoint: { name: 'external', server, kubeconfigPath: path, kubeconfig } };
}
