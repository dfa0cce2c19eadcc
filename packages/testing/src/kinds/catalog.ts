import { OptionsError } from '@reconcile-loop/primitives';
import { ApiServerUsageError } from '../errors.js';
import type { ResourceType } from './resource.js';

/** Names one served resource for the typed object API: `{ group: '', plural: 'pods' }` or a registered one. */
export interface ApiServerResourceRef {
  group: string;
  plural: string;
  version?: string;
}

/**
 * Every served resource, by `group/version/plural`: the one record routing, discovery and the
 * typed controls read. Groups and versions are derived from it, never stored beside it.
 */
export class ResourceCatalog {
  readonly #byPath = new Map<string, ResourceType>();

  /** The lookup key of a served path: `/v1/pods`, `apps/v1/deployments`. */
  static key(group: string, version: string, plural: string): string {
    return `${group}/${version}/${plural}`;
  }

  /** Serves `r`; a second resource at the same group/version/plural is a usage error. */
  add(r: ResourceType): void {
    const key = ResourceCatalog.key(r.group, r.version, r.plural);
    if (this.#byPath.has(key))
      throw new OptionsError('ApiServer', `registerResource: ${r.plural}.${r.group}/${r.version} is already registered`);
    this.#byPath.set(key, r);
  }

  /** Stops serving a resource (its stored objects stay, as a deleted CRD's data stays in etcd). */
  remove(group: string, version: string, plural: string): void {
    this.#byPath.delete(ResourceCatalog.key(group, version, plural));
  }

  /** The resource served at a path's group/version/plural. */
  at(group: string, version: string, plural: string): ResourceType | undefined {
    return this.#byPath.get(ResourceCatalog.key(group, version, plural));
  }

  /** The resource a typed-control ref names, or RL_APISERVER_UNKNOWN_RESOURCE. */
  resolve(ref: ApiServerResourceRef): ResourceType {
    for (const r of this.#byPath.values()) {
      if (r.group === ref.group && r.plural === ref.plural && (ref.version === undefined || r.version === ref.version)) return r;
    }
    throw new ApiServerUsageError('RL_APISERVER_UNKNOWN_RESOURCE', `no resource ${ref.plural}.${ref.group} is registered`);
  }

  /** The resource serving `kind` at `apiVersion` (`v1`, `example.com/v1`), if any. */
  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    for (const r of this.#byPath.values()) if (r.apiVersion === apiVersion && r.kind === kind) return r;
    return undefined;
  }

  /** Resources served in one group/version, in registration order. */
  inGroupVersion(group: string, version: string): ResourceType[] {
    return [...this.#byPath.values()].filter((r) => r.group === group && r.version === version);
  }

  /** Served named API groups and their versions, in registration order. */
  groups(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const r of this.#byPath.values()) {
      if (r.group === '') continue;
      const versions = out.get(r.group) ?? [];
      if (!versions.includes(r.version)) versions.push(r.version);
      out.set(r.group, versions);
    }
    return out;
  }

  /** Every served resource. */
  all(): ResourceType[] {
    return [...this.#byPath.values()];
  }
}
