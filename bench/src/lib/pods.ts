/**
 * Realistic pods, shaped as a real apiserver returns them for a controller-owned pod on a bound
 * node: managedFields for the controller and the kubelet, labels, annotations, an owner reference,
 * one container with env, resources, probes and mounts, a projected service-account volume,
 * tolerations, and a Running status with conditions and containerStatuses. About 4 KB of JSON each.
 *
 * Deterministic: the same index always yields the same pod, so every implementation in a run
 * reads the same bytes.
 */

/** The label that names a pod's parent (its cell); the key map of every benchmark reads it. */
export const PARENT_LABEL = 'reconcile-loop.dev/cell';
/** The namespace every benchmark pod lives in. */
export const NAMESPACE = 'bench';
/** The annotation carrying a frame's send time: wall-clock ms (`performance.timeOrigin + now()`) in the sender. */
export const SENT_AT_ANNOTATION = 'bench.reconcile-loop.dev/sent-at';
/** Pods per parent: a cell of 8 (one engine, seven trainers, as the pool tracker sees them). */
export const PODS_PER_PARENT = 8;

/** A pod as JSON (what `JSON.parse` of the wire bytes gives). */
export type PodJson = {
  apiVersion: string;
  kind: string;
  metadata: Record<string, unknown> & {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    resourceVersion?: string;
  };
  spec: Record<string, unknown> & { nodeName?: string; containers: Array<Record<string, unknown>> };
  status: Record<string, unknown> & {
    conditions: Array<Record<string, unknown>>;
    containerStatuses: Array<Record<string, unknown> & { restartCount: number }>;
  };
};

/** xorshift32: cheap, seedable, and stable across Node versions. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 0x9e3779b9;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}

const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
function suffix(next: () => number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[next() % ALPHABET.length];
  return out;
}
function hex(next: () => number, length: number): string {
  let out = '';
  while (out.length < length) out += next().toString(16).padStart(8, '0');
  return out.slice(0, length);
}
function uuid(next: () => number): string {
  const h = hex(next, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const EPOCH = Date.UTC(2025, 0, 15, 9, 30, 0);

/** The parent (cell) of pod `i`. */
export function parentOf(i: number): string {
  return `cell-${Math.floor(i / PODS_PER_PARENT)}`;
}

/** The name of pod `i`. */
export function podName(i: number): string {
  const next = rng(i + 1);
  return `trainer-${parentOf(i)}-7d9f8b6c5-${suffix(next, 5)}`;
}

/** A realistic running pod, index `i` (names, IPs, node and owner derive from it). */
export function makePod(i: number, resourceVersion = String(1000 + i)): PodJson {
  const next = rng(i + 1);
  const cell = parentOf(i);
  const name = `trainer-${cell}-7d9f8b6c5-${suffix(next, 5)}`;
  const rsName = `trainer-${cell}-7d9f8b6c5`;
  const node = `gpu-node-${String(i % 64).padStart(3, '0')}`;
  const podIP = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  const hostIP = `10.128.0.${(i % 64) + 2}`;
  const created = EPOCH + i * 1000;
  const started = created + 2_000;
  const ready = created + 9_000;
  const tokenVolume = `kube-api-access-${suffix(next, 5)}`;
  const image = 'ghcr.io/miles/trainer:v2.14.3';
  const containerID = `containerd://${hex(next, 64)}`;
  const time = rfc3339(created);
  const uid = uuid(next);
  uuid(next); // drawn as before, so every other field of pod i is unchanged
  // Pods of one ReplicaSet carry its uid: one owner uid per cell (this generator gave each pod its
  // own until 2026-11-30, which no cluster does; BENCHMARKS.md (15) gives the heap both ways).
  const ownerUid = uuid(rng(1_000_003 + Math.floor(i / PODS_PER_PARENT)));
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      name,
      generateName: `${rsName}-`,
      namespace: NAMESPACE,
      uid,
      resourceVersion,
      creationTimestamp: time,
      labels: {
        'app.kubernetes.io/name': 'trainer',
        'app.kubernetes.io/instance': 'llm-pretrain-run-42',
        [PARENT_LABEL]: cell,
        'pod-template-hash': '7d9f8b6c5',
      },
      annotations: {
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '9400',
      },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: rsName,
          uid: ownerUid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'v1',
          time,
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': {
              'f:annotations': { '.': {}, 'f:prometheus.io/port': {}, 'f:prometheus.io/scrape': {} },
              'f:generateName': {},
              'f:labels': {
                '.': {},
                'f:app.kubernetes.io/instance': {},
                'f:app.kubernetes.io/name': {},
                [`f:${PARENT_LABEL}`]: {},
                'f:pod-template-hash': {},
              },
              'f:ownerReferences': { '.': {}, [`k:{"uid":"${ownerUid}"}`]: {} },
            },
            'f:spec': {
              'f:containers': {
                'k:{"name":"trainer"}': {
                  '.': {},
                  'f:args': {},
                  'f:env': {},
                  'f:image': {},
                  'f:imagePullPolicy': {},
                  'f:name': {},
                  'f:resources': {
                    '.': {},
                    'f:limits': { '.': {}, 'f:memory': {}, 'f:nvidia.com/gpu': {} },
                    'f:requests': { '.': {}, 'f:cpu': {}, 'f:memory': {} },
                  },
                  'f:terminationMessagePath': {},
                  'f:terminationMessagePolicy': {},
                },
              },
              'f:dnsPolicy': {},
              'f:enableServiceLinks': {},
              'f:restartPolicy': {},
              'f:terminationGracePeriodSeconds': {},
              'f:tolerations': {},
            },
          },
        },
        {
          manager: 'kubelet',
          operation: 'Update',
          apiVersion: 'v1',
          time: rfc3339(ready),
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:status': {
              'f:conditions': {
                'k:{"type":"ContainersReady"}': {
                  '.': {},
                  'f:lastProbeTime': {},
                  'f:lastTransitionTime': {},
                  'f:status': {},
                  'f:type': {},
                },
                'k:{"type":"Ready"}': {
                  '.': {},
                  'f:lastProbeTime': {},
                  'f:lastTransitionTime': {},
                  'f:status': {},
                  'f:type': {},
                },
              },
              'f:containerStatuses': {},
              'f:hostIP': {},
              'f:hostIPs': {},
              'f:phase': {},
              'f:podIP': {},
              'f:podIPs': { '.': {}, [`k:{"ip":"${podIP}"}`]: { '.': {}, 'f:ip': {} } },
              'f:startTime': {},
            },
          },
          subresource: 'status',
        },
      ],
    },
    spec: {
      volumes: [
        {
          name: tokenVolume,
          projected: {
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            ],
            defaultMode: 420,
          },
        },
      ],
      containers: [
        {
          name: 'trainer',
          image,
          args: ['--config=/etc/trainer/config.yaml', `--cell=${cell}`, '--log-format=json'],
          env: [
            { name: 'CELL', value: cell },
            { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
          ],
          resources: {
            limits: { cpu: '8', memory: '64Gi', 'nvidia.com/gpu': '1' },
            requests: { cpu: '8', memory: '64Gi', 'nvidia.com/gpu': '1' },
          },
          volumeMounts: [{ name: tokenVolume, readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }],
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      serviceAccountName: 'default',
      serviceAccount: 'default',
      nodeName: node,
      securityContext: {},
      schedulerName: 'default-scheduler',
      tolerations: [
        { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
    },
    status: {
      phase: 'Running',
      conditions: [
        { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: rfc3339(created + 1_000) },
        { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: rfc3339(ready) },
        { type: 'ContainersReady', status: 'True', lastProbeTime: null, lastTransitionTime: rfc3339(ready) },
        { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: time },
      ],
      hostIP,
      hostIPs: [{ ip: hostIP }],
      podIP,
      podIPs: [{ ip: podIP }],
      startTime: rfc3339(created + 1_000),
      containerStatuses: [
        {
          name: 'trainer',
          state: { running: { startedAt: rfc3339(started) } },
          lastState: {},
          ready: true,
          restartCount: 0,
          image,
          imageID: `ghcr.io/miles/trainer@sha256:${hex(next, 64)}`,
          containerID,
          started: true,
        },
      ],
      qosClass: 'Guaranteed',
    },
  };
}

/**
 * The next state of a pod as the kubelet reports a container restart: restartCount + 1, the last
 * state becomes terminated, Ready flips, and a heartbeat annotation changes. `seq` makes each
 * modification distinct. Returns a fresh object; `pod` is not mutated.
 */
export function modifyPod(pod: PodJson, seq: number, annotations: Record<string, string> = {}): PodJson {
  const status = pod.status;
  const cs = status.containerStatuses[0]!;
  const at = rfc3339(EPOCH + 86_400_000 + seq * 10);
  const ready = seq % 2 === 0 ? 'True' : 'False';
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      annotations: { ...pod.metadata.annotations, 'miles.dev/heartbeat': String(seq), ...annotations },
    },
    status: {
      ...status,
      conditions: status.conditions.map((c) =>
        c['type'] === 'Ready' || c['type'] === 'ContainersReady' ? { ...c, status: ready, lastTransitionTime: at } : c,
      ),
      containerStatuses: [
        {
          ...cs,
          restartCount: cs.restartCount + 1,
          ready: ready === 'True',
          state: { running: { startedAt: at } },
          lastState: {
            terminated: { exitCode: 137, reason: 'OOMKilled', startedAt: at, finishedAt: at, containerID: cs['containerID'] },
          },
        },
      ],
    },
  };
}
