import { randomBytes } from 'node:crypto';
import { ApiServerStatusError } from './errors.js';
import type { ResourceEngine } from './engine/engine.js';
import type { MvccStore } from './engine/store.js';
import { rfc3339 } from './engine/meta.js';
import { POD_RESOURCE } from './kinds/pod.js';
import { conflict, failure } from './status.js';
import type { ApiServerPod, PodContainerStatus } from './types.js';

/** Options for {@link KubeletEmulator.setRunningReady}. */
export interface RunningReadyOptions {
  /** Ready condition and every container's `ready`. Default true. */
  ready?: boolean | undefined;
  /** `status.podIP`; default an address from 10.244.0.0/16 unique per pod. */
  podIP?: string | undefined;
  /** `status.hostIP`; default 10.0.0.1. */
  hostIP?: string | undefined;
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

let construct: (registry: ResourceEngine, now: () => Date) => KubeletEmulator;

/** The kubelet emulator writing through `registry` (the one `ApiServer.kubelet` holds). */
export function createKubelet(registry: ResourceEngine, now: () => Date): KubeletEmulator {
  return construct(registry, now);
}

/**
 * What a kubelet and the scheduler write to pods on a real cluster, as direct writes: binding,
 * Running/Ready, container restarts, terminal phases and finishing a graceful deletion. Each
 * write is one revision, so watchers see one MODIFIED (or DELETED) per call.
 */
export class KubeletEmulator {
  #nextIp = 2;

  readonly #registry: ResourceEngine;
  readonly #now: () => Date;

  static {
    construct = (registry, now) => new KubeletEmulator(registry, now);
  }

  /** Private so the engine it writes through stays out of the public API: the server builds it with {@link createKubelet}. */
  private constructor(registry: ResourceEngine, now: () => Date) {
    this.#registry = registry;
    this.#now = now;
  }

  #write(ns: string, name: string, fn: (p: ApiServerPod) => void, opts: { keepGeneration?: boolean } = {}): ApiServerPod {
    return clone(
      this.#registry.mutate(
        POD_RESOURCE,
        ns,
        name,
        (o) => {
          fn(o as ApiServerPod);
          return o;
        },
        opts,
      ) as ApiServerPod,
    );
  }

  #setCondition(p: ApiServerPod, type: string, status: 'True' | 'False'): void {
    p.status ??= {};
    const conditions = p.status.conditions ?? [];
    const at = rfc3339(this.#now());
    const existing = conditions.find((c) => c.type === type);
    if (existing === undefined) conditions.push({ type, status, lastProbeTime: null, lastTransitionTime: at });
    else if (existing.status !== status) {
      existing.status = status;
      existing['lastTransitionTime'] = at;
    }
    p.status.conditions = conditions;
  }

  /** The scheduler's binding: sets `spec.nodeName` and PodScheduled=True. A bound pod answers 409. */
  bind(namespace: string, name: string, nodeName: string): ApiServerPod {
    const current = this.#registry.get(POD_RESOURCE, namespace, name) as ApiServerPod;
    const bound = current.spec?.nodeName;
    if (bound !== undefined && bound !== '') {
      throw new ApiServerStatusError(
        conflict({ group: '', plural: 'pods/binding' }, name, `pod ${name} is already assigned to node "${bound}"`),
      );
    }
    // pods/binding writes nodeName straight to storage, past the pod strategy: generation stays.
    return this.#write(
      namespace,
      name,
      (p) => {
        p.spec = { ...p.spec, nodeName };
        this.#setCondition(p, 'PodScheduled', 'True');
      },
      { keepGeneration: true },
    );
  }

  /** Phase Running, every container running (and ready unless `ready: false`), IPs and conditions set. */
  setRunningReady(namespace: string, name: string, opts: RunningReadyOptions = {}): ApiServerPod {
    const current = this.#registry.get(POD_RESOURCE, namespace, name) as ApiServerPod;
    if ((current.spec?.nodeName ?? '') === '') {
      throw new ApiServerStatusError(
        failure(400, 'BadRequest', `pod ${namespace}/${name} is not bound to a node; bind it first`),
      );
    }
    const ready = opts.ready ?? true;
    const at = rfc3339(this.#now());
    return this.#write(namespace, name, (p) => {
      p.status ??= {};
      const prev = new Map((p.status.containerStatuses ?? []).map((c) => [c.name, c]));
      p.status.phase = 'Running';
      p.status.hostIP = opts.hostIP ?? p.status.hostIP ?? '10.0.0.1';
      p.status.podIP = opts.podIP ?? p.status.podIP ?? `10.244.${Math.floor(this.#nextIp / 250)}.${(this.#nextIp++ % 250) + 2}`;
      p.status['podIPs'] = [{ ip: p.status.podIP }];
      p.status.startTime ??= at;
      this.#setCondition(p, 'PodScheduled', 'True');
      this.#setCondition(p, 'Initialized', 'True');
      this.#setCondition(p, 'ContainersReady', ready ? 'True' : 'False');
      this.#setCondition(p, 'Ready', ready ? 'True' : 'False');
      p.status.containerStatuses = (p.spec?.containers ?? []).map((c): PodContainerStatus => {
        const old = prev.get(c.name);
        const running = old?.state?.['running'];
        const status: PodContainerStatus = {
          name: c.name,
          state: running !== undefined ? old!.state! : { running: { startedAt: at } },
          lastState: old?.lastState ?? {},
          ready,
          restartCount: old?.restartCount ?? 0,
          image: c.image ?? '',
          imageID: old?.imageID ?? '',
          containerID: old?.containerID ?? `containerd://${randomBytes(32).toString('hex')}`,
          started: true,
        };
        return status;
      });
    });
  }

  /** One container (default: the first) restarted: restartCount+1, lastState terminated, running again. */
  bumpRestartCount(namespace: string, name: string, container?: string): ApiServerPod {
    const at = rfc3339(this.#now());
    const current = this.#registry.get(POD_RESOURCE, namespace, name) as ApiServerPod;
    const target = container ?? current.spec?.containers?.[0]?.name;
    if (target === undefined || !(current.spec?.containers ?? []).some((c) => c.name === target)) {
      throw new ApiServerStatusError(
        failure(400, 'BadRequest', `pod ${namespace}/${name} has no container ${JSON.stringify(target ?? '')}`),
      );
    }
    return this.#write(namespace, name, (p) => {
      p.status ??= {};
      const list = p.status.containerStatuses ?? [];
      let cs = list.find((c) => c.name === target);
      if (cs === undefined) {
        const spec = p.spec?.containers?.find((c) => c.name === target);
        cs = {
          name: target,
          ready: false,
          restartCount: 0,
          image: spec?.image ?? '',
          imageID: '',
          started: false,
          state: {},
          lastState: {},
        };
        list.push(cs);
      }
      const startedAt = (cs.state?.['running'] as { startedAt?: string } | undefined)?.startedAt ?? at;
      cs.restartCount += 1;
      cs.lastState = {
        terminated: { exitCode: 1, reason: 'Error', startedAt, finishedAt: at, containerID: cs.containerID ?? '' },
      };
      cs.state = { running: { startedAt: at } };
      cs.containerID = `containerd://${randomBytes(32).toString('hex')}`;
      cs.started = true;
      p.status.containerStatuses = list;
    });
  }

  /** A terminal phase: every container terminated (exit 0 for Succeeded, 1 for Failed), not ready. */
  setPhase(namespace: string, name: string, phase: 'Succeeded' | 'Failed'): ApiServerPod {
    const at = rfc3339(this.#now());
    return this.#write(namespace, name, (p) => {
      p.status ??= {};
      p.status.phase = phase;
      this.#setCondition(p, 'Ready', 'False');
      this.#setCondition(p, 'ContainersReady', 'False');
      p.status.containerStatuses = (p.spec?.containers ?? []).map((c) => {
        const old = (p.status?.containerStatuses ?? []).find((s) => s.name === c.name);
        return {
          name: c.name,
          ready: false,
          restartCount: old?.restartCount ?? 0,
          image: c.image ?? '',
          imageID: old?.imageID ?? '',
          started: false,
          state: {
            terminated: {
              exitCode: phase === 'Succeeded' ? 0 : 1,
              reason: phase === 'Succeeded' ? 'Completed' : 'Error',
              finishedAt: at,
            },
          },
          lastState: old?.lastState ?? {},
        };
      });
    });
  }

  /**
   * What the kubelet does when a terminating pod's containers are gone: a delete with grace 0.
   * The pod leaves (DELETED) unless finalizers hold it. Only a pod with `deletionTimestamp` qualifies.
   */
  finishGracefulDelete(namespace: string, name: string): ApiServerPod {
    const current = this.#registry.get(POD_RESOURCE, namespace, name) as ApiServerPod;
    if (current.metadata.deletionTimestamp === undefined) {
      throw new ApiServerStatusError(failure(400, 'BadRequest', `pod ${namespace}/${name} is not being deleted`));
    }
    return clone(this.#registry.delete(POD_RESOURCE, namespace, name, { gracePeriodSeconds: 0 }).object as ApiServerPod);
  }
}

/**
 * `kubeletAutoFinishDeleteMs`: a bound pod given a deletionTimestamp is finished (the kubelet's
 * 0-grace delete) after `ms`, unless by then it is gone or was replaced (another uid).
 */
export function autoFinishDeletes(store: MvccStore, kubelet: KubeletEmulator, timers: Set<NodeJS.Timeout>, ms: number): void {
  store.subscribe((e) => {
    if (e.resource.id !== POD_RESOURCE.id || e.type !== 'MODIFIED') return;
    if (e.object.metadata.deletionTimestamp === undefined || e.prev?.metadata.deletionTimestamp !== undefined) return;
    if ((e.object.metadata.deletionGracePeriodSeconds ?? 0) === 0) return;
    const ns = e.object.metadata.namespace ?? '';
    const name = e.object.metadata.name ?? '';
    const t = setTimeout(() => {
      timers.delete(t);
      const cur = store.get(POD_RESOURCE, `${ns}/${name}`);
      if (cur?.metadata.uid === e.object.metadata.uid && cur?.metadata.deletionTimestamp !== undefined)
        kubelet.finishGracefulDelete(ns, name);
    }, ms);
    timers.add(t);
  });
}
