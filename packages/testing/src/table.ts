import { negotiateConversion } from './http/accept.js';
import type { ApiServerObject } from './types.js';

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

/** The AGE cell of an object created at `ts`. */
export function age(ts: string | undefined, now: Date): string {
  if (ts === undefined) return '<unknown>';
  return humanDuration(now.getTime() - Date.parse(ts));
}

/** One `columnDefinitions` entry of a Table. */
export interface TableColumn {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

/**
 * How a kind is printed as a Table: its columns and the cells of one object. Each kind's strategy
 * provides both (`KindStrategy` extends this); {@link toTable} reads nothing else of the kind.
 */
export interface TablePrinter {
  readonly tableColumns: readonly TableColumn[];
  tableCells(obj: ApiServerObject, now: Date): unknown[];
}

/** NAME and AGE: what the apiserver prints for a kind without its own printer. */
export const GENERIC_COLUMNS: readonly TableColumn[] = [
  { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
  {
    name: 'Age',
    type: 'string',
    format: '',
    description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
    priority: 0,
  },
];

/** NAME and AGE cells for {@link GENERIC_COLUMNS}. */
export function genericCells(o: ApiServerObject, now: Date): unknown[] {
  return [o.metadata.name ?? '', age(o.metadata.creationTimestamp, now)];
}

function rowObject(o: ApiServerObject, include: IncludeObject, version: TableVersion): unknown {
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
export function toTable(r: TablePrinter, objects: readonly ApiServerObject[], o: TableOptions): Record<string, unknown> {
  const metadata: Record<string, unknown> = { resourceVersion: o.resourceVersion };
  if (o.continueToken !== undefined) metadata['continue'] = o.continueToken;
  if (o.remainingItemCount !== undefined) metadata['remainingItemCount'] = o.remainingItemCount;
  const rows = objects.map((obj) => {
    const cells = r.tableCells(obj, o.now);
    const row: Record<string, unknown> = { cells };
    const ro = rowObject(obj, o.include, o.version);
    if (ro !== undefined) row['object'] = ro;
    return row;
  });
  const table: Record<string, unknown> = { kind: 'Table', apiVersion: `meta.k8s.io/${o.version}`, metadata };
  table['columnDefinitions'] = o.withColumns ? r.tableColumns : null;
  table['rows'] = rows;
  return table;
}

/** Reads the Accept header: the Table version when the client prefers a Table, else undefined. */
export function acceptsTable(accept: string | undefined): TableVersion | undefined {
  return negotiateConversion(accept, (c) =>
    c.as === 'Table' && c.g === 'meta.k8s.io' && (c.v === 'v1' || c.v === 'v1beta1') ? c.v : undefined,
  );
}
