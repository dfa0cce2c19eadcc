/** A pod as the apiserver serializes it (raw JSON shape), with fields the view drops. */
export function rawPod(overrides: { name?: string; namespace?: string; resourceVersion?: string } = {}): Record<string, unknown> {
  const name = overrides.name ?? 'engine-0';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: overrides.namespace ?? 'pool-a',
      uid: `uid-${name}`,
      resourceVersion: overrides.resourceVersion ?? '100',
      generation: 1,
      creationTimestamp: '2024-05-01T10:11:12Z',
      labels: { app: 'sglang-engine', 'miles.io/cell': 'cell-0' },
      annotations: { 'miles.io/role': 'engine' },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: 'engine-rs',
          uid: 'rs-uid',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [{ manager: 'kubelet', operation: 'Update', fieldsV1: { 'f:status': {} } }],
    },
    spec: {
      nodeName: 'gpu-node-1',
      containers: [{ name: 'engine', image: 'sglang:v1', args: ['--tp', '8'] }],
      restartPolicy: 'Always',
    },
    status: {
      phase: 'Running',
      podIP: '10.0.0.7',
      podIPs: [{ ip: '10.0.0.7' }],
      hostIP: '192.168.1.10',
      startTime: '2024-05-01T10:11:13Z',
      qosClass: 'Burstable',
      conditions: [
        { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2024-05-01T10:11:20Z' },
        { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: '2024-05-01T10:11:12Z' },
      ],
      containerStatuses: [
        {
          name: 'engine',
          ready: true,
          started: true,
          restartCount: 2,
          image: 'sglang:v1',
          imageID: 'sha256:abc',
          state: { running: { startedAt: '2024-05-01T10:11:19Z' } },
          lastState: {
            terminated: {
              exitCode: 137,
              reason: 'OOMKilled',
              startedAt: '2024-05-01T10:11:14Z',
              finishedAt: '2024-05-01T10:11:18Z',
            },
          },
        },
      ],
    },
  };
}
