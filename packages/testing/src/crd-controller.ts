import type { ResourceEngine } from './engine/engine.js';
import { rfc3339 } from './engine/meta.js';
import type { MvccStore } from './engine/store.js';
import { ApiServerStatusError } from './errors.js';
import type { ResourceCatalog } from './kinds/catalog.js';
import { CRD_CLEANUP_FINALIZER, CRD_RESOURCE, crdSpec, servedResources } from './kinds/crd.js';
import type { ApiServerObject } from './types.js';

/**
 * The apiextensions controllers a client sees: a new or changed CRD gets its kinds served and its
 * status set (NamesAccepted, then Established, with acceptedNames), one tick after the write, as
 * the real establishing controller does shortly after the create; a deleted CRD (held by
 * {@link CRD_CLEANUP_FINALIZER}) stops being served, its instances are deleted, and the finalizer
 * is removed so the CRD goes.
 */
export class CrdController {
  readonly #served = new Map<string, Array<{ group: string; version: string; plural: string }>>();

  readonly #store: MvccStore;
  readonly #engine: ResourceEngine;
  readonly #catalog: ResourceCatalog;
  readonly #timers: Set<NodeJS.Timeout>;
  readonly #now: () => Date;

  constructor(store: MvccStore, engine: ResourceEngine, catalog: ResourceCatalog, timers: Set<NodeJS.Timeout>, now: () => Date) {
    this.#store = store;
    this.#engine = engine;
    this.#catalog = catalog;
    this.#timers = timers;
    this.#now = now;
    store.subscribe((e) => {
      if (e.resource.id !== CRD_RESOURCE.id) return;
      const name = e.object.metadata.name ?? '';
      if (e.type === 'DELETED') return;
      if (e.object.metadata.deletionTimestamp !== undefined) this.#later(() => this.#cleanup(name));
      else if (e.type === 'ADDED' || e.object.metadata.generation !== e.prev?.metadata.generation)
        this.#later(() => this.#establish(name));
    });
  }

  #later(fn: () => void): void {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, 0);
    this.#timers.add(t);
  }

  #current(name: string): ApiServerObject | undefined {
    return this.#store.get(CRD_RESOURCE, `/${name}`);
  }

  #unserve(name: string): void {
    for (const s of this.#served.get(name) ?? []) this.#catalog.remove(s.group, s.version, s.plural);
    this.#served.delete(name);
  }

  #establish(name: string): void {
    const crd = this.#current(name);
    if (crd === undefined || crd.metadata.deletionTimestamp !== undefined) return;
    this.#unserve(name);
    const mine: Array<{ group: string; version: string; plural: string }> = [];
    let conflict: string | undefined;
    for (const r of servedResources(crd)) {
      if (this.#catalog.at(r.group, r.version, r.plural) !== undefined) {
        conflict = `${r.plural}.${r.group}/${r.version} is already served`;
        continue;
      }
      this.#catalog.add(r);
      mine.push({ group: r.group, version: r.version, plural: r.plural });
    }
    this.#served.set(name, mine);
    const spec = crdSpec(crd);
    const at = rfc3339(this.#now());
    const names = {
      ...spec.names,
      singular: spec.names.singular ?? spec.names.kind.toLowerCase(),
      listKind: spec.names.listKind ?? `${spec.names.kind}List`,
    };
    const conditions =
      conflict === undefined
        ? [
            {
              type: 'NamesAccepted',
              status: 'True',
              lastTransitionTime: at,
              reason: 'NoConflicts',
              message: 'no conflicts found',
            },
            {
              type: 'Established',
              status: 'True',
              lastTransitionTime: at,
              reason: 'InitialNamesAccepted',
              message: 'the initial names have been accepted',
            },
          ]
        : [{ type: 'NamesAccepted', status: 'False', lastTransitionTime: at, reason: 'AlreadyServed', message: conflict }];
    this.#engine.mutate(CRD_RESOURCE, '', name, (o) => {
      const status = (o['status'] ?? {}) as Record<string, unknown>;
      o['status'] = { ...status, conditions, acceptedNames: names };
      return o;
    });
  }

  #cleanup(name: string): void {
    const crd = this.#current(name);
    if (crd === undefined) return;
    const defined = servedResources(crd);
    this.#unserve(name);
    for (const r of defined.slice(0, 1)) {
      for (const [, o] of this.#store.listCurrent(r, undefined)) {
        try {
          this.#engine.delete(r, o.metadata.namespace ?? '', o.metadata.name ?? '', { gracePeriodSeconds: 0 });
        } catch (e) {
          if (!(e instanceof ApiServerStatusError)) throw e;
        }
      }
    }
    this.#engine.mutate(CRD_RESOURCE, '', name, (o) => {
      o.metadata.finalizers = (o.metadata.finalizers ?? []).filter((f) => f !== CRD_CLEANUP_FINALIZER);
      return o;
    });
  }
}
