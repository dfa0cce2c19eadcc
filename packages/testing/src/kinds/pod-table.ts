import { age, humanDuration, type TableColumn } from '../table.js';
import type { ApiServerPod } from '../types.js';

/** kubectl's pod columns, as the pods printer defines them (priority 1 shows with `-o wide`). */
export const POD_COLUMNS: readonly TableColumn[] = [
  { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
  {
    name: 'Ready',
    type: 'string',
    format: '',
    description: 'The aggregate readiness state of this pod for accepting traffic.',
    priority: 0,
  },
  { name: 'Status', type: 'string', format: '', description: 'The aggregate status of the containers in this pod.', priority: 0 },
  {
    name: 'Restarts',
    type: 'string',
    format: '',
    description:
      'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.',
    priority: 0,
  },
  {
    name: 'Age',
    type: 'string',
    format: '',
    description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
    priority: 0,
  },
  { name: 'IP', type: 'string', format: '', description: 'podIP is an IP address allocated to the pod.', priority: 1 },
  {
    name: 'Node',
    type: 'string',
    format: '',
    description: 'NodeName indicates in which node this pod is scheduled.',
    priority: 1,
  },
  {
    name: 'Nominated Node',
    type: 'string',
    format: '',
    description: 'nominatedNodeName is set only when this pod preempts other pods on the node.',
    priority: 1,
  },
  {
    name: 'Readiness Gates',
    type: 'string',
    format: '',
    description: 'If specified, all readiness gates will be evaluated for pod readiness.',
    priority: 1,
  },
];

function rec(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The STATUS column: a waiting/terminated container reason beats the phase; deletion shows Terminating. */
function podStatusCell(p: ApiServerPod): string {
  let reason = p.status?.reason ?? p.status?.phase ?? 'Unknown';
  let hasRunning = false;
  const statuses = [...(p.status?.containerStatuses ?? [])].reverse();
  for (const cs of statuses) {
    const state = rec(cs.state);
    const waiting = rec(state['waiting']);
    const terminated = rec(state['terminated']);
    if (typeof waiting['reason'] === 'string' && waiting['reason'] !== '') reason = waiting['reason'];
    else if (typeof terminated['reason'] === 'string' && terminated['reason'] !== '') reason = terminated['reason'];
    else if (state['terminated'] !== undefined) {
      reason =
        typeof terminated['signal'] === 'number' && terminated['signal'] !== 0
          ? `Signal:${terminated['signal']}`
          : `ExitCode:${String(terminated['exitCode'] ?? 0)}`;
    } else if (cs.ready && state['running'] !== undefined) hasRunning = true;
  }
  if (reason === 'Completed' && hasRunning) {
    const ready = (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
    reason = ready ? 'Running' : 'NotReady';
  }
  if (p.metadata.deletionTimestamp !== undefined) reason = p.status?.reason === 'NodeLost' ? 'Unknown' : 'Terminating';
  return reason;
}

function podRestartsCell(p: ApiServerPod, now: Date): string {
  let restarts = 0;
  let last: number | undefined;
  for (const cs of p.status?.containerStatuses ?? []) {
    restarts += cs.restartCount;
    const finished = rec(rec(cs.lastState)['terminated'])['finishedAt'];
    if (typeof finished === 'string') {
      const t = Date.parse(finished);
      if (last === undefined || t > last) last = t;
    }
  }
  return last !== undefined && restarts > 0 ? `${restarts} (${humanDuration(now.getTime() - last)} ago)` : String(restarts);
}

/** One pod row for {@link POD_COLUMNS}. */
export function podCells(p: ApiServerPod, now: Date): unknown[] {
  const containers = p.spec?.containers?.length ?? 0;
  const ready = (p.status?.containerStatuses ?? []).filter((c) => c.ready).length;
  return [
    p.metadata.name ?? '',
    `${ready}/${containers}`,
    podStatusCell(p),
    podRestartsCell(p, now),
    age(p.metadata.creationTimestamp, now),
    p.status?.podIP ?? '<none>',
    p.spec?.nodeName ?? '<none>',
    typeof p.status?.['nominatedNodeName'] === 'string' ? p.status['nominatedNodeName'] : '<none>',
    '<none>',
  ];
}
