import { CoreV1Api, type KubeConfig, type V1Node, type V1Pod } from '@kubernetes/client-node';

/** A pod manifest that needs nothing from a node: never pulled, since no kubelet runs. */
export function podManifest(
  name: string,
  options: { labels?: Record<string, string>; containers?: readonly string[] } = {},
): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...(options.labels ? { labels: options.labels } : {}) },
    spec: {
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 30,
      containers: (options.containers ?? ['main']).map((c) => ({ name: c, image: 'registry.invalid/e2e/pause:1' })),
    },
  };
}

function isConflict(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 409;
}

/**
 * Plays the kubelet of one Node against a real apiserver: binds pods through the
 * `pods/binding` subresource and writes the pod status a kubelet would (Running, Ready,
 * restarts), and performs the final delete after a graceful one. Status writes retry on a
 * 409 conflict with a fresh read, as a kubelet's status manager does.
 */
export class KubeletEmulator {
  readonly nodeName: string;
  readonly #core: CoreV1Api;

  constructor(kubeConfig: KubeConfig, nodeName: string) {
    this.nodeName = nodeName;
    this.#core = kubeConfig.makeApiClient(CoreV1Api);
  }

  /** Creates the Node object (Ready) unless it exists. */
  async registerNode(): Promise<V1Node> {
    try {
      return await this.#core.readNode({ name: this.nodeName });
    } catch (error) {
      if ((error as { code?: unknown }).code !== 404) throw error;
    }
    const node = await this.#core.createNode({ body: { apiVersion: 'v1', kind: 'Node', metadata: { name: this.nodeName } } });
    const now = new Date();
    node.status = {
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'e2e emulated kubelet',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
      ],
    };
    return this.#core.replaceNodeStatus({ name: this.nodeName, body: node });
  }

  /** Binds a pending pod to this node (what the scheduler does). */
  async bind(namespace: string, name: string): Promise<V1Pod> {
    await this.#core.createNamespacedPodBinding({
      name,
      namespace,
      body: {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name, namespace },
        target: { apiVersion: 'v1', kind: 'Node', name: this.nodeName },
      },
    });
    return this.#core.readNamespacedPod({ name, namespace });
  }

  async #updateStatus(namespace: string, name: string, mutate: (pod: V1Pod, now: Date) => void): Promise<V1Pod> {
    for (let attempt = 0; ; attempt++) {
      const pod = await this.#core.readNamespacedPod({ name, namespace });
      mutate(pod, new Date());
      try {
        return await this.#core.replaceNamespacedPodStatus({ name, namespace, body: pod });
      } catch (error) {
        if (!isConflict(error) || attempt >= 5) throw error;
      }
    }
  }

  /** Phase Running; every container running; Ready and ContainersReady as `ready` says. */
  setRunning(namespace: string, name: string, options: { ready?: boolean } = {}): Promise<V1Pod> {
    const ready = options.ready ?? true;
    return this.#updateStatus(namespace, name, (pod, now) => {
      const previous = new Map((pod.status?.containerStatuses ?? []).map((s) => [s.name, s]));
      const flagOf = (b: boolean): string => (b ? 'True' : 'False');
      pod.status = {
        ...pod.status,
        phase: 'Running',
        hostIP: '127.0.0.1',
        podIP: pod.status?.podIP ?? '10.244.0.10',
        startTime: pod.status?.startTime ?? now,
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
          { type: 'Initialized', status: 'True', lastTransitionTime: now },
          { type: 'ContainersReady', status: flagOf(ready), lastTransitionTime: now },
          { type: 'Ready', status: flagOf(ready), lastTransitionTime: now },
        ],
        containerStatuses: (pod.spec?.containers ?? []).map((c) => {
          const before = previous.get(c.name);
          return {
            name: c.name,
            image: c.image ?? '',
            imageID: '',
            ready,
            started: true,
            restartCount: before?.restartCount ?? 0,
            state: before?.state?.running ? before.state : { running: { startedAt: now } },
            ...(before?.lastState ? { lastState: before.lastState } : {}),
          };
        }),
      };
    });
  }

  /** A container exits and is restarted: restartCount + 1, lastState terminated, running again. */
  restartContainer(namespace: string, name: string, container?: string): Promise<V1Pod> {
    return this.#updateStatus(namespace, name, (pod, now) => {
      const statuses = pod.status?.containerStatuses ?? [];
      const target = statuses.find((s) => container === undefined || s.name === container);
      if (target === undefined)
        throw new Error(`pod ${namespace}/${name} has no status for container ${container ?? '(any)'}; call setRunning first`);
      const startedAt = target.state?.running?.startedAt ?? now;
      target.lastState = { terminated: { exitCode: 1, reason: 'Error', startedAt, finishedAt: now } };
      target.state = { running: { startedAt: now } };
      target.restartCount = (target.restartCount ?? 0) + 1;
    });
  }

  /**
   * A graceful delete: the apiserver only sets deletionTimestamp on a bound pod and waits for
   * the kubelet. Returns the pod as it then stands.
   */
  async beginDelete(namespace: string, name: string, gracePeriodSeconds = 30): Promise<V1Pod> {
    return this.#core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds });
  }

  /** The kubelet's final delete once containers are gone (gracePeriodSeconds=0). */
  async finishDelete(namespace: string, name: string): Promise<void> {
    await this.#core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
  }
}
