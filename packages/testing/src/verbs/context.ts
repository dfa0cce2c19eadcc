import type { ResourceEngine } from '../engine/engine.js';
import type { MvccStore } from '../engine/store.js';
import type { ResourceCatalog } from '../kinds/catalog.js';
import type { ResourceType } from '../kinds/resource.js';
import type { KubeletEmulator } from '../kubelet.js';
import type { ResolvedOptions } from '../options.js';
import type { WatchHub } from '../watch/hub.js';

/** What every verb handler reads: the storage engine, the served resources, watch fan-out and options. */
export interface ServerContext {
  readonly store: MvccStore;
  readonly engine: ResourceEngine;
  readonly catalog: ResourceCatalog;
  readonly hub: WatchHub;
  readonly opts: ResolvedOptions;
  readonly now: () => Date;
  /** The scheduler's binding goes through the same write as `server.kubelet.bind`. */
  readonly kubelet: KubeletEmulator;
  /** Waits a close() must abort (future-revision waits). */
  readonly inflight: Set<AbortController>;
  isClosed(): boolean;
}

/** A request routed to a resource: its collection, one object, or the object's status. */
export interface Route {
  kind: 'collection' | 'item' | 'status' | 'binding' | 'eviction';
  resource: ResourceType;
  /** The path's namespace; undefined for cluster-scoped kinds and all-namespace collections. */
  namespace: string | undefined;
  name?: string;
}

/** The subresource a write through `route` targets. */
export function subresourceOf(route: Route): { subresource?: 'status' } {
  return route.kind === 'status' ? { subresource: 'status' } : {};
}
