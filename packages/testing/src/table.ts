import type { ResourceType } from './resources.js';
import type { KubeObject, Pod } from './types.js';

/** What a row carries besides cells (`includeObject` query parameter; default Metadata). */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** The `meta.k8s.io` version a client asked the Table in. */
export type TableVersion = 'v1' | 'v1beta1';

/** `duration.HumanDuration`: the AGE column's compact spelling (`45s`, `3m20s`, `5h`, `12d`). */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.floor(hours / 24) % 365;
    const y = Math.floor(hours / 24 / 365);
    return dy === 0 ? `${y}y` : `${y}y${dy}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

function age(ts: string | undefined, now: Date): string {
  if (ts === undefined) return '<unknown>';
  return humanDuration(now.getTime() - Date.parse(ts));
}

const POD_COLUMNS = [
  { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
  { name: 'Ready', type: 'string', format: '', description: 'The aggregate readiness state of this pod for accepting traffic.', priority: 0 },
  { name: 'Status', type: 'string', format: '', description: 'The aggregate status of the containers in this pod.', priority: 0 },
  { name: 'Restarts', type: 'string', format: '', description: 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.', priority: 0 },
  { name: 'Age', type: 'string', format: '', description: 'CreationTimestamp is a timestamp representing the server time when this object was created.', priority: 0 },
  { name: 'IP', type: 'string', format: '', description: 'podIP is an IP address allocated to the pod.', priority: 1 },
  { name: 'Node', type: 'string', format: '', description: 'NodeName indicates in which node this pod is scheduled.', priority: 1 },
  { name: 'Nominated Node', type: 'string', format: '', description: 'nominatedNodeName is set only when this pod preempts other pods on the node.', priority: 1 },
  { name: 'Readiness Gates', type: 'string', format: '', description: 'If specified, all readiness gates will be evaluated for pod readiness.', priority: 1 },
];

const GENERIC_COLUMNS = [
  { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
  { name: 'Age', type: 'string', format: '', description: 'CreationTimestamp is a timestamp representing the server time when this object was created.', priority: 0 },
];

function rec(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The STATUS column: a waiting/terminated container reason beats the phase; deletion shows Terminating. */
function podStatusCell(p: Pod): string {
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
      reason = typeof terminated['signal'] === 'number' && terminated['signal'] !== 0 ? `Signal:${terminated['signal']}` : `ExitCode:${String(terminated['exitCode'] ?? 0)}`;
    } else if (cs.ready && state['running'] !== undefined) hasRunning = true;
  }
  if (reason === 'Completed' && hasRunning) {
    const ready = (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
    reason = ready ? 'Running' : 'NotReady';
  }
  if (p.metadata.deletionTimestamp !== undefined) reason = p.status?.reason === 'NodeLost' ? 'Unknown' : 'Terminating';
  return reason;
}

function podRestartsCell(p: Pod, now: Date): string {
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

function podCells(p: Pod, now: Date): unknown[] {
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

function rowObject(o: KubeObject, include: IncludeObject, version: TableVersion): unknown {
  if (include === 'None') return undefined;
  if (include === 'Object') return o;
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: o.metadata };
}

/** Options for {@link toTable}. */
export interface TableOptions {
  include: IncludeObject;
  version: TableVersion;
  resourceVersion: string;
  continueToken?: string;
  remainingItemCount?: number;
  /** False for watch events after the first: kubectl prints headers once, from the first Table. */
  withColumns: boolean;
  now: Date;
}

/** Server-side printing: the `meta.k8s.io` Table kubectl asks for with `as=Table`. */
export function toTable(r: ResourceType, objects: readonly KubeObject[], o: TableOptions): Record<string, unknown> {
  const metadata: Record<string, unknown> = { resourceVersion: o.resourceVersion };
  if (o.continueToken !== undefined) metadata['continue'] = o.continueToken;
  if (o.remainingItemCount !== undefined) metadata['remainingItemCount'] = o.remainingItemCount;
  const rows = objects.map((obj) => {
    const cells = r.isPod ? podCells(obj as Pod, o.now) : [obj.metadata.name ?? '', age(obj.metadata.creationTimestamp, o.now)];
    const row: Record<string, unknown> = { cells };
    const ro = rowObject(obj, o.include, o.version);
    if (ro !== undefined) row['object'] = ro;
    return row;
  });
  const table: Record<string, unknown> = { kind: 'Table', apiVersion: `meta.k8s.io/${o.version}`, metadata };
  table['columnDefinitions'] = o.withColumns ? (r.isPod ? POD_COLUMNS : GENERIC_COLUMNS) : null;
  table['rows'] = rows;
  return table;
}

/** Reads the Accept header: the Table version when the client prefers a Table, else undefined. */
export function acceptsTable(accept: string | undefined): TableVersion | undefined {
  if (accept === undefined) return undefined;
  for (const part of accept.split(',')) {
    const [type, ...params] = part.split(';').map((s) => s.trim());
    if (type !== 'application/json' && type !== '*/*') continue;
    const p: Record<string, string> = {};
    for (const kv of params) {
      const i = kv.indexOf('=');
      if (i > 0) p[kv.slice(0, i).trim()] = kv.slice(i + 1).trim();
    }
    if (p['as'] === undefined) return undefined;
    if (p['as'] === 'Table' && p['g'] === 'meta.k8s.io' && (p['v'] === 'v1' || p['v'] === 'v1beta1')) return p['v'];
  }
  return undefined;
}
