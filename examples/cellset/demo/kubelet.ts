/**
 * A scripted scheduler + kubelet for the embedded apiserver (which runs no pods): every new pod of
 * a CellSet is bound to a node and then, as `fate` decides, reported Running and Ready or Failed
 * (say, OOMKilled at start). Graceful deletions of bound pods are finished after `finishDeleteMs`,
 * as a kubelet does once the containers stopped. It polls the in-process server (no HTTP, no clock
 * of the controller's), every `intervalMs` of real time.
 */
import { ApiServerStatusError, ApiServerUsageError, type ApiServer } from '@reconcile-loop/testing';
import { CELLSET_LABEL } from '../src/api.js';

/** What happens to a pod once it is bound. */
export type PodFate = 'ready' | 'fail' | 'pending';

/** A pod as the kubelet reads it from the server's typed API. */
export interface KubeletPod {
  readonly metadata: { name: string; uid?: string; labels?: Record<string, string>; deletionTimestamp?: string };
  readonly spec?: {
    nodeName?: string;
    containers?: Array<{ name: string; image?: string; env?: Array<{ name: string; value?: string }> }>;
  };
}

/** Options of {@link startKubelet}. */
export interface KubeletOptions {
  readonly server: ApiServer;
  readonly namespace: string;
  /** Decides each new pod's fate. Default: ready. */
  readonly fate?: ((pod: KubeletPod) => PodFate) | undefined;
  /** Told about every pod it started or failed (the demo narrates them). */
  readonly onPod?: ((name: string, fate: PodFate, node: string) => void) | undefined;
  readonly intervalMs?: number | undefined;
  readonly finishDeleteMs?: number | undefined;
}

/** A running scripted kubelet. */
export interface Kubelet {
  /** Stops polling; idempotent. */
  stop(): void;
  /** Marks a running pod terminal (a crash with `restartPolicy: Never`, a node lost). */
  fail(name: string): void;
}

/** Starts the scripted kubelet. */
export function startKubelet(options: KubeletOptions): Kubelet {
  const { server, namespace } = options;
  const nodes = ['node-a', 'node-b', 'node-c'];
  const seen = new Set<string>();
  const deleting = new Map<string, number>();
  let next = 0;
  const tick = (): void => {
    let pods: KubeletPod[];
    try {
      pods = server.listPods(namespace) as unknown as KubeletPod[];
    } catch {
      return; // the server closed: the next stop() ends us
    }
    const now = Date.now();
    for (const pod of pods) {
      const { name, uid, labels } = pod.metadata;
      if (labels?.[CELLSET_LABEL] === undefined) continue;
      if (pod.metadata.deletionTimestamp !== undefined) {
        const since = deleting.get(name) ?? now;
        deleting.set(name, since);
        if (now - since >= (options.finishDeleteMs ?? 300)) {
          deleting.delete(name);
          guard(() => server.kubelet.finishGracefulDelete(namespace, name));
        }
        continue;
      }
      const id = uid ?? name;
      if (seen.has(id)) continue;
      seen.add(id);
      const fate = options.fate?.(pod) ?? 'ready';
      if (fate === 'pending') continue;
      const node = nodes[next++ % nodes.length]!;
      guard(() => {
        server.kubelet.bind(namespace, name, node);
        if (fate === 'ready') server.kubelet.setRunningReady(namespace, name);
        else server.kubelet.setPhase(namespace, name, 'Failed');
        options.onPod?.(name, fate, node);
      });
    }
  };
  const timer = setInterval(tick, options.intervalMs ?? 25);
  return {
    stop: () => clearInterval(timer),
    fail: (name) => guard(() => server.kubelet.setPhase(namespace, name, 'Failed')),
  };
}

/** A pod deleted between the list and the write (404, 409), or a server already closed, is not the kubelet's problem. */
function guard(write: () => void): void {
  try {
    write();
  } catch (error) {
    if (error instanceof ApiServerStatusError && (error.status.code === 404 || error.status.code === 409)) return;
    if (error instanceof ApiServerUsageError && error.code === 'RL_APISERVER_CLOSED') return;
    throw error;
  }
}
