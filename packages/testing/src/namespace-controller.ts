import type { ResourceEngine } from './engine/engine.js';
import { storageKey } from './engine/engine.js';
import type { MvccStore } from './engine/store.js';
import { ApiServerStatusError } from './errors.js';
import type { ResourceCatalog } from './kinds/catalog.js';
import { NAMESPACE_RESOURCE } from './kinds/namespace.js';

/**
 * The namespace controller's part a test sees: once a namespace is Terminating, every namespaced
 * object in it is deleted (grace 0), and when nothing is left the namespace itself goes (DELETED).
 * It runs after the DELETE request answered (the response shows Terminating), and again after
 * every write in a terminating namespace, so an object held by finalizers holds the namespace.
 */
export class NamespaceController {
  readonly #pending = new Set<string>();

  readonly #store: MvccStore;
  readonly #engine: ResourceEngine;
  readonly #catalog: ResourceCatalog;
  readonly #timers: Set<NodeJS.Timeout>;

  constructor(store: MvccStore, engine: ResourceEngine, catalog: ResourceCatalog, timers: Set<NodeJS.Timeout>) {
    this.#store = store;
    this.#engine = engine;
    this.#catalog = catalog;
    this.#timers = timers;
    store.subscribe((e) => {
      if (e.resource.id === NAMESPACE_RESOURCE.id) {
        if (e.type === 'MODIFIED' && e.object.metadata.deletionTimestamp !== undefined)
          this.#schedule(e.object.metadata.name ?? '');
        return;
      }
      const ns = e.object.metadata.namespace;
      if (ns !== undefined && this.#terminating(ns)) this.#schedule(ns);
    });
  }

  #terminating(ns: string): boolean {
    return this.#store.get(NAMESPACE_RESOURCE, storageKey('', ns))?.metadata.deletionTimestamp !== undefined;
  }

  #schedule(ns: string): void {
    if (this.#pending.has(ns)) return;
    this.#pending.add(ns);
    const t = setTimeout(() => {
      this.#timers.delete(t);
      this.#pending.delete(ns);
      this.#sweep(ns);
    }, 0);
    this.#timers.add(t);
  }

  #sweep(ns: string): void {
    if (!this.#terminating(ns)) return;
    let left = 0;
    for (const r of this.#catalog.all()) {
      if (!r.namespaced) continue;
      for (const [, o] of this.#store.listCurrent(r, ns)) {
        try {
          const out = this.#engine.delete(r, ns, o.metadata.name ?? '', { gracePeriodSeconds: 0 });
          if (!out.deleted) left++;
        } catch (e) {
          if (!(e instanceof ApiServerStatusError)) throw e;
          left++;
        }
      }
    }
    if (left === 0 && this.#terminating(ns)) this.#engine.remove(NAMESPACE_RESOURCE, '', ns);
  }
}
