import { readFileSync, mkdirSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { caFromServingBundle, type ClusterAccess } from './kubeconfig.js';
import { ManagedProcess, ManagedService, waitUntil } from './managed-process.js';
import { freePort } from './ports.js';

/** Files every apiserver of one control plane shares: one admin token, one service-account key pair. */
export interface SharedSecrets {
  readonly token: string;
  readonly tokenFile: string;
  readonly serviceAccountKeyFile: string;
  readonly serviceAccountPublicKeyFile: string;
}

/** Options for one kube-apiserver process. */
export interface KubeApiserverOptions {
  readonly name: string;
  readonly binary: string;
  readonly runDir: string;
  readonly etcdUrl: string;
  readonly secrets: SharedSecrets;
  /** false gives `--watch-cache=false`: every watch and list reaches etcd, so compaction is visible. */
  readonly watchCache: boolean;
  readonly serviceClusterIpRange?: string;
  /**
   * Whether this process keeps an apiserver identity Lease (`kube-system/apiserver-<hash>`); default
   * true. The Lease is named from a hash of the host name, so every apiserver of one control plane on
   * this host would renew the same Lease with its own holder and fight over it (conflicts every 10 s
   * renewal, in their logs and in the 409 counts of their metrics). Exactly one apiserver per etcd
   * keeps it; the others start with the `APIServerIdentity` gate off.
   */
  readonly identity?: boolean | undefined;
  readonly extraArgs?: readonly string[];
}

/**
 * The arguments with every `--feature-gates=` merged into one flag, plus `APIServerIdentity=false`
 * when this apiserver does not keep the identity Lease. `UnknownVersionInteroperabilityProxy` goes
 * off with it: the proxy routes by identity Leases, and from 1.36 (beta, default on) an apiserver
 * with it on and `APIServerIdentity` off refuses to start ("depends on features that are
 * disabled"); the gate exists since 1.28, so naming it is valid on every pinned line.
 */
export function featureGateArgs(extraArgs: readonly string[], identity: boolean): string[] {
  const prefix = '--feature-gates=';
  const gates = extraArgs.filter((a) => a.startsWith(prefix)).flatMap((a) => a.slice(prefix.length).split(',').filter(Boolean));
  if (!identity) gates.push('APIServerIdentity=false', 'UnknownVersionInteroperabilityProxy=false');
  const rest = extraArgs.filter((a) => !a.startsWith(prefix));
  return gates.length === 0 ? rest : [...rest, prefix + gates.join(',')];
}

/** GET `path` with the admin token, TLS unverified (the probe runs before the CA is known). */
export function probe(port: number, path: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolveProbe, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'GET',
        rejectUnauthorized: false,
        headers: { authorization: `Bearer ${token}` },
        timeout: 5_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c));
        res.on('end', () => resolveProbe({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timeout`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * One kube-apiserver on 127.0.0.1 with a self-signed serving certificate (written by the
 * apiserver into its cert dir on first start and reused after a restart, so the CA stays valid).
 */
export class KubeApiserver extends ManagedService {
  readonly name: string;
  readonly port: number;
  readonly token: string;
  readonly certDir: string;
  #caPem: string | undefined;

  private constructor(name: string, port: number, proc: ManagedProcess, token: string, certDir: string) {
    super(proc);
    this.name = name;
    this.port = port;
    this.token = token;
    this.certDir = certDir;
  }

  /** Starts the process and waits for /readyz. */
  static async start(options: KubeApiserverOptions): Promise<KubeApiserver> {
    const port = await freePort();
    const certDir = join(options.runDir, options.name, 'certs');
    mkdirSync(certDir, { recursive: true });
    const proc = new ManagedProcess({
      name: options.name,
      binary: options.binary,
      runDir: options.runDir,
      logFile: join(options.runDir, 'logs', `${options.name}.log`),
      args: [
        `--etcd-servers=${options.etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${port}`,
        `--cert-dir=${certDir}`,
        `--token-auth-file=${options.secrets.tokenFile}`,
        `--service-account-key-file=${options.secrets.serviceAccountPublicKeyFile}`,
        `--service-account-signing-key-file=${options.secrets.serviceAccountKeyFile}`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-cluster-ip-range=${options.serviceClusterIpRange ?? '10.0.0.0/24'}`,
        // RBAC like a real cluster; the admin token is in system:masters, which bypasses it.
        '--authorization-mode=RBAC',
        // No token controller runs, so ServiceAccount admission would reject every pod.
        '--disable-admission-plugins=ServiceAccount',
        // Two apiservers share one advertise address; neither may fight over the kubernetes endpoints.
        '--endpoint-reconciler-type=none',
        // Only a test compacts, so a scenario's resourceVersions stay valid until it says so.
        '--etcd-compaction-interval=0',
        `--watch-cache=${String(options.watchCache)}`,
        '--allow-privileged=true',
        '--enable-priority-and-fairness=false',
        '--profiling=false',
        ...featureGateArgs(options.extraArgs ?? [], options.identity ?? true),
      ],
    });
    const apiserver = new KubeApiserver(options.name, port, proc, options.secrets.token, certDir);
    await apiserver.startProcess();
    return apiserver;
  }

  /** https URL of this apiserver. */
  get server(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** PEM of the CA that signed the serving certificate (known once the first start is ready). */
  get caPem(): string {
    if (this.#caPem === undefined) throw new Error(`${this.name}: CA not known before the first start`);
    return this.#caPem;
  }

  /** Server URL, CA and token. */
  get access(): ClusterAccess {
    return { server: this.server, caPem: this.caPem, token: this.token };
  }

  /** Starts the (stopped) process and waits until /readyz answers ok. */
  override async startProcess(timeoutMs = 120_000): Promise<void> {
    this.process.start();
    await waitUntil(
      this.process,
      '/readyz',
      async () => (await probe(this.port, '/readyz', this.token)).status === 200,
      timeoutMs,
    );
    this.#caPem ??= caFromServingBundle(readFileSync(join(this.certDir, 'apiserver.crt'), 'utf8'), '127.0.0.1');
  }
}
