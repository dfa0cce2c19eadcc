import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { ManagedProcess, ManagedService, waitUntil } from './managed-process.js';

/** Raised when etcd's HTTP/JSON gateway refuses a request. */
export class EtcdError extends Error {
  readonly code = 'E2E_ETCD_ERROR';
  constructor(message: string) {
    super(message);
    this.name = 'EtcdError';
  }
}

/** etcd's answer to a compaction request. */
export interface CompactResult {
  /** False when the revision was compacted already (etcd answers "required revision has been compacted"). */
  readonly compacted: boolean;
  readonly revision: number;
}

/**
 * A single-member etcd on loopback ephemeral ports, data in the run directory. Restart keeps
 * the data and ports, so apiservers reconnect to the same revisions.
 */
export class Etcd extends ManagedService {
  readonly clientUrl: string;

  private constructor(clientUrl: string, proc: ManagedProcess) {
    super(proc);
    this.clientUrl = clientUrl;
  }

  /** Starts etcd and waits until /health reports true. */
  static async start(options: { binary: string; runDir: string }): Promise<Etcd> {
    const clientPort = await freePort();
    const peerPort = await freePort();
    const dataDir = join(options.runDir, 'etcd-data');
    mkdirSync(dataDir, { recursive: true });
    const clientUrl = `http://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const proc = new ManagedProcess({
      name: 'etcd',
      binary: options.binary,
      runDir: options.runDir,
      logFile: join(options.runDir, 'logs', 'etcd.log'),
      args: [
        '--name=e2e',
        `--data-dir=${dataDir}`,
        `--listen-client-urls=${clientUrl}`,
        `--advertise-client-urls=${clientUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=e2e=${peerUrl}`,
        '--initial-cluster-state=new',
        // Test data is disposable; fsync would make every write wait on the disk.
        '--unsafe-no-fsync',
        // Compaction only when a test asks for it.
        '--auto-compaction-retention=0',
        // As kubeadm does: progress notifications let the watch cache advance its resourceVersion
        // without writes to that resource, which bookmarks need.
        '--watch-progress-notify-interval=5s',
        '--log-level=warn',
      ],
    });
    const etcd = new Etcd(clientUrl, proc);
    await etcd.startProcess();
    return etcd;
  }

  /** Starts the (stopped) process again and waits for health. */
  override async startProcess(): Promise<void> {
    this.process.start();
    await waitUntil(this.process, 'etcd /health', async () => {
      const response = await fetch(`${this.clientUrl}/health`, { signal: AbortSignal.timeout(2_000) });
      const body = (await response.json()) as { health?: string };
      return body.health === 'true';
    });
  }

  async #post(path: string, body: unknown): Promise<Record<string, unknown>> {
    const response = await fetch(`${this.clientUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const json = (await response.json()) as Record<string, unknown>;
    if (!response.ok) throw new EtcdError(`etcd ${path}: HTTP ${response.status} ${JSON.stringify(json)}`);
    return json;
  }

  /** The current etcd revision; equals the newest Kubernetes resourceVersion of any object. */
  async revision(): Promise<number> {
    const json = await this.#post('/v3/kv/range', { key: Buffer.from('\0').toString('base64'), count_only: true });
    const header = json['header'] as { revision?: string } | undefined;
    const revision = Number(header?.revision);
    if (!Number.isSafeInteger(revision)) throw new EtcdError(`etcd range: no revision in ${JSON.stringify(json)}`);
    return revision;
  }

  /**
   * Physically compacts history up to `revision` (default: the current one) through etcd's v3
   * HTTP/JSON gateway, so every older resourceVersion is gone for an uncached apiserver.
   */
  async compact(revision?: number): Promise<CompactResult> {
    const target = revision ?? (await this.revision());
    try {
      await this.#post('/v3/kv/compaction', { revision: String(target), physical: true });
      return { compacted: true, revision: target };
    } catch (error) {
      if (error instanceof EtcdError && error.message.includes('required revision has been compacted')) {
        return { compacted: false, revision: target };
      }
      throw error;
    }
  }
}
