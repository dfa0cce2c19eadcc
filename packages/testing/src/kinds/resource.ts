/**
 * A served resource: its identity (group, version, kind, plural) and the per-kind strategy the one
 * generic engine consults — validation, defaulting, the status subresource, graceful deletion,
 * field selectors and table columns. Every kind, built-in or custom, is one of these values.
 */
import { setOwn } from '../engine/json-safe.js';
import type { NameRule } from '../engine/meta.js';
import type { FieldError } from '../status.js';
import { GENERIC_COLUMNS, genericCells, type TablePrinter } from '../table.js';
import type { ApiServerObject, ObjectMeta } from '../types.js';

/** What {@link ApiServer.registerResource} needs to serve a kind at a generic path. */
export interface ResourceDefinition {
  /** API group, e.g. `example.com`. Empty only for the built-in core group. */
  group: string;
  /** Version, e.g. `v1`. */
  version: string;
  /** Kind, e.g. `Widget`. */
  kind: string;
  /** Plural resource name used in paths, e.g. `widgets`. */
  plural: string;
  /** Singular name for discovery; defaults to the lower-cased kind. */
  singular?: string | undefined;
  /** Short names for discovery (kubectl `get w`). */
  shortNames?: string[] | undefined;
  /** Whether `/status` is a separate subresource (main writes then ignore status). Default true. */
  statusSubresource?: boolean | undefined;
  /** Namespaced (default) or cluster-scoped. */
  namespaced?: boolean | undefined;
}

/**
 * The per-kind behaviour the engine consults. Each hook receives a private copy it may change;
 * hooks never write to the store themselves (the engine commits exactly once per request).
 */
export interface KindStrategy extends TablePrinter {
  /** Cluster-scoped kinds (Namespace, CustomResourceDefinition) have no namespace segment. */
  readonly namespaced: boolean;
  /** `/status` is its own subresource: main writes keep status, status writes keep everything else. */
  readonly statusSubresource: boolean;
  /** A DELETE that removed the object answers it (pods, services) or a Success Status (every other kind). */
  readonly returnDeletedObject: boolean;
  /** List items carry kind/apiVersion for custom resources (unstructured), not for built-ins. */
  readonly listItemsCarryType: boolean;
  /** An update without `metadata.resourceVersion` is unconditional (built-ins) or refused (custom resources). */
  readonly allowUnconditionalUpdate: boolean;
  /** The strategic-merge-patch schema's list merge keys by JSON path (`spec.containers` → `name`), or undefined when the kind refuses strategic merge. */
  readonly strategicMergeKeys: Readonly<Record<string, string>> | undefined;
  /** The rule `metadata.name` obeys. */
  readonly nameRule: NameRule;
  /** Discovery categories (`all` for pods). */
  readonly categories: readonly string[];
  readonly supportedFields: readonly string[];
  unknownFieldMessage(field: string): string;
  fieldSet(obj: ApiServerObject): Record<string, string>;
  /** Create-time defaulting and status reset. `direct` writes (typed controls) keep a given status. */
  prepareForCreate(obj: ApiServerObject, direct: boolean): void;
  /** Update-time defaulting of the main resource. */
  prepareForUpdate(next: ApiServerObject, old: ApiServerObject): void;
  /** Kind-specific validation of a new or updated object (metadata is validated by the engine). */
  validate(obj: ApiServerObject): FieldError[];
  /** Update-only validation (immutable fields). */
  validateUpdate(next: ApiServerObject, old: ApiServerObject): FieldError[];
  /** Whether `metadata.generation` is kept (pods, custom resources; not ConfigMaps, Services, Namespaces…). */
  readonly tracksGeneration: boolean;
  /** The part of an object whose change bumps `metadata.generation`. */
  generationPart(obj: ApiServerObject): unknown;
  /** The metadata a `/status` write keeps: the old one, or (pods) with the body's labels and annotations. */
  prepareStatusMetadata(old: ObjectMeta, body: ObjectMeta): ObjectMeta;
  /** What a BOOKMARK object carries besides kind, apiVersion and metadata (pods: empty spec/status stubs). */
  readonly bookmarkStub: Readonly<Record<string, unknown>>;
  /** True while something besides `metadata.finalizers` holds a deleted object (a namespace's `spec.finalizers`). */
  holdsDeletion(obj: ApiServerObject): boolean;
  /** Changes a deleted object takes on with its `deletionTimestamp` (a namespace turns Terminating). */
  prepareForDelete(obj: ApiServerObject): void;
  /** Deletion goes through a MODIFIED carrying `deletionTimestamp` first (pods), even with grace 0. */
  readonly gracefulDelete: boolean;
  /** The grace period a DELETE gives `obj` (0: it goes at once, modulo finalizers). */
  gracePeriod(obj: ApiServerObject, requested: number | undefined): number;
}

/** A resource the server serves: identity plus strategy. */
export interface ResourceType extends KindStrategy {
  /** Storage identity: `group/plural` (one bucket whatever version serves it). */
  readonly id: string;
  readonly group: string;
  readonly version: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
}

/** Reads a value as a field-selector string. */
export function str(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
}

/** Everything except metadata, kind, apiVersion and (with a status subresource) status. */
function specPart(statusSubresource: boolean) {
  return (o: ApiServerObject): unknown => {
    const rest: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) {
      if (k === 'metadata' || k === 'kind' || k === 'apiVersion') continue;
      if (k === 'status' && statusSubresource) continue;
      setOwn(rest, k, v);
    }
    return rest;
  };
}

const META_FIELDS = ['metadata.name', 'metadata.namespace'];

/** Merge keys every built-in kind shares: finalizers are a set, owner references keyed by uid. */
export const META_MERGE_KEYS: Readonly<Record<string, string>> = { 'metadata.finalizers': '', 'metadata.ownerReferences': 'uid' };

/**
 * The default strategy: no kind-specific validation or defaulting, generation follows everything
 * but metadata (and status with a subresource), deletion is immediate unless finalizers hold it.
 */
export function genericStrategy(o: { statusSubresource: boolean; namespaced: boolean; builtIn: boolean }): KindStrategy {
  return {
    namespaced: o.namespaced,
    statusSubresource: o.statusSubresource,
    // Only some registries (pods, services) answer a finished DELETE with the object; the rest send a Success Status.
    returnDeletedObject: false,
    listItemsCarryType: !o.builtIn,
    allowUnconditionalUpdate: o.builtIn,
    strategicMergeKeys: o.builtIn ? META_MERGE_KEYS : undefined,
    nameRule: 'subdomain',
    categories: [],
    supportedFields: META_FIELDS,
    unknownFieldMessage: o.builtIn
      ? (field) => `field label not supported: ${field}`
      : (field) => `"${field}" is not a known field selector: only "metadata.name", "metadata.namespace"`,
    fieldSet: (obj) => ({ 'metadata.name': str(obj.metadata.name), 'metadata.namespace': str(obj.metadata.namespace) }),
    prepareForCreate(obj, direct) {
      if (o.statusSubresource && !direct) delete obj['status'];
    },
    prepareForUpdate() {},
    validate: () => [],
    validateUpdate: () => [],
    tracksGeneration: !o.builtIn,
    generationPart: specPart(o.statusSubresource),
    prepareStatusMetadata: (old) => ({ ...old }),
    bookmarkStub: {},
    holdsDeletion: () => false,
    prepareForDelete() {},
    gracefulDelete: false,
    gracePeriod: () => 0,
    tableColumns: GENERIC_COLUMNS,
    tableCells: genericCells,
  };
}

/** Builds a served resource from its identity and strategy. */
export function resourceType(def: ResourceDefinition, strategy: KindStrategy): ResourceType {
  return {
    ...strategy,
    id: `${def.group}/${def.plural}`,
    group: def.group,
    version: def.version,
    apiVersion: def.group === '' ? def.version : `${def.group}/${def.version}`,
    kind: def.kind,
    listKind: `${def.kind}List`,
    plural: def.plural,
    singular: def.singular ?? def.kind.toLowerCase(),
    shortNames: def.shortNames ?? [],
  };
}

/** Builds the served form of a registered custom resource. */
export function customResource(def: ResourceDefinition): ResourceType {
  return resourceType(
    def,
    genericStrategy({ statusSubresource: def.statusSubresource ?? true, namespaced: def.namespaced ?? true, builtIn: false }),
  );
}
