import { OptionsError } from '@reconcile-loop/primitives';
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RequestCounters } from './controls/counters.js';
import { FaultQueue } from './controls/faults.js';
import { ResourceEngine, storageKey, type ApiServerDeleteOptions } from './engine/engine.js';
import { MvccStore } from './engine/store.js';
import { ApiServerUsageError } from './errors.js';
import { handleRequest, type HandlerDeps } from './http/handler.js';
import { autoFinishDeletes, createKubelet, type KubeletEmulator } from './kubelet.js';
import { renderKubeconfig, type KubeconfigOptions } from './kubeconfig.js';
import { ResourceCatalog, type ApiServerResourceRef } from './kinds/catalog.js';
import { CrdController } from './crd-controller.js';
import { loadManifests } from './manifests.js';
import { CORE_KINDS } from './kinds/core.js';
import { CRD_RESOURCE } from './kinds/crd.js';
import { BUILT_IN_NAMESPACES, NAMESPACE_RESOURCE } from './kinds/namespace.js';
import { POD_RESOURCE } from './kinds/pod.js';
import { NamespaceController } from './namespace-controller.js';
import { customResource, type ResourceDefinition } from './kinds/resource.js';
import {
  resolveOptions,
  type ApiServerOptions,
  type FailNextOptions,
  type ResolvedOptions,
  type ApiServerVerb,
} from './options.js';
import type { ApiServerObject, ApiServerPod } from './types.js';
import type { ServerContext } from './verbs/context.js';
import { WatchHub } from './watch/hub.js';

export type { ApiServerOptions, FailNextOptions, FutureWatchBehavior, InjectedStatus, ApiServerVerb } from './options.js';
export type { ApiServerResourceRef } from './kinds/catalog.js';

/** A pod as {@link ApiServer.createPod} accepts it: containers default to one pause container. */
export type PodInput = Omit<ApiServerPod, 'metadata'> & {
  metadata: ApiServerPod['metadata'] & { name?: string | undefined; namespace?: string | undefined };
};

/** Options for {@link ApiServer.seedPods}. */
export interface SeedPodsOptions {
  namespace?: string | undefined;
  labels?: Record<string, string> | undefined;
  /** Names are `<namePrefix>-<i>`. Default `pod`. */
  namePrefix?: string | undefined;
  /** Bind every pod to this node. */
  nodeName?: string | undefined;
}

const DEFAULT_IMAGE = 'registry.k8s.io/pause:3.9';
const POD_REF: ApiServerResourceRef = { group: '', plural: 'pods' };

let construct: (server: Server, options: ApiServerOptions) => ApiServer;

/**
 * The embedded apiserver: HTTP on loopback plus the typed test controls. Create it with
 * {@link startApiServer}; close it with `close()` or `await using`.
 *
 * This class is the public facade only: requests go through `http/` (routing, discovery) to
 * `verbs/` (one module per verb), which read and write through the one generic
 * {@link ResourceEngine} over the revisioned {@link MvccStore}; `watch/` fans commits out, and
 * `kinds/` holds the per-kind strategies.
 */
export class ApiServer implements AsyncDisposable {
  /** Base URL, e.g. `http://127.0.0.1:38211`. */
  readonly url: string;
  /** The port actually bound. */
  readonly port: number;
  /** The listen address. */
  readonly host: string;
  /** Scheduler and kubelet emulation for pods. */
  readonly kubelet: KubeletEmulator;

  readonly #store: MvccStore;
  readonly #engine: ResourceEngine;
  readonly #catalog = new ResourceCatalog();
  readonly #hub: WatchHub;
  readonly #namespaces: NamespaceController;
  readonly #crds: CrdController;
  readonly #counters = new RequestCounters();
  readonly #faults = new FaultQueue();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #inflight = new Set<AbortController>();
  #closed = false;
  #closing: Promise<void> | undefined;
  readonly #now: () => Date;
  readonly #opts: ResolvedOptions;
  readonly #token: string | undefined;

  readonly #server: Server;

  static {
    construct = (server, options) => new ApiServer(server, options);
  }

  /** Private: {@link startApiServer} builds it once the socket listens. */
  private constructor(server: Server, options: ApiServerOptions) {
    this.#server = server;
    const addr = server.address() as AddressInfo;
    this.host = options.host ?? '127.0.0.1';
    this.port = addr.port;
    this.url = `http://${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`;
    const wallClock = options.wallClock;
    this.#now = wallClock === undefined ? () => new Date() : () => new Date(wallClock());
    this.#opts = resolveOptions(options);
    this.#token = options.token;
    this.#store = new MvccStore(this.#opts.maxHistory);
    this.#engine = new ResourceEngine(this.#store, this.#now, {
      legacyDeletion: this.#opts.deletionEvents === 'immediate',
      implicitNamespaces: this.#opts.implicitNamespaces,
    });
    this.kubelet = createKubelet(this.#engine, this.#now);
    this.#hub = new WatchHub(this.#store, () => this.#counters.notify());
    this.#catalog.add(POD_RESOURCE);
    this.#catalog.add(NAMESPACE_RESOURCE);
    for (const r of CORE_KINDS) this.#catalog.add(r);
    this.#catalog.add(CRD_RESOURCE);
    for (const ns of BUILT_IN_NAMESPACES)
      this.#engine.create(NAMESPACE_RESOURCE, '', { metadata: { name: ns } }, { direct: true });
    this.#namespaces = new NamespaceController(this.#store, this.#engine, this.#catalog, this.#timers);
    this.#crds = new CrdController(this.#store, this.#engine, this.#catalog, this.#timers, this.#now);
    if (options.kubeletAutoFinishDeleteMs !== undefined)
      autoFinishDeletes(this.#store, this.kubelet, this.#timers, options.kubeletAutoFinishDeleteMs);
    const ctx: ServerContext = {
      store: this.#store,
      engine: this.#engine,
      catalog: this.#catalog,
      hub: this.#hub,
      opts: this.#opts,
      now: this.#now,
      kubelet: this.kubelet,
      inflight: this.#inflight,
      isClosed: () => this.#closed,
    };
    const deps: HandlerDeps = {
      ctx,
      counters: this.#counters,
      faults: this.#faults,
      token: this.#token,
      discovery: {
        host: this.host,
        port: this.port,
        version: options.version ?? { major: '1', minor: '35', gitVersion: 'v1.35.4+reconcile-loop' },
      },
    };
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      // handleRequest answers every failure itself; this catch only guards a failure to write the answer.
      handleRequest(deps, req, res).catch(() => res.destroy());
    });
  }

  // ---------------------------------------------------------------- state

  /** The newest revision (every write bumps it; `resourceVersion` is its decimal string). */
  get revision(): number {
    return this.#store.revision;
  }

  /** Watches from below this revision get 410; exact reads below it too. */
  get compactedRevision(): number {
    return this.#store.compactedRevision;
  }

  /** Watches currently streaming. */
  get openWatchCount(): number {
    return this.#hub.size;
  }

  /** Watches closed so far because their client stopped reading (see `maxWatchBufferBytes`). */
  get terminatedWatchCount(): number {
    return this.#hub.terminatedCount;
  }

  /**
   * Serves a kind at `/apis/{group}/{version}/namespaces/{ns}/{plural}` (or `/apis/{group}/{version}/{plural}`
   * when `namespaced: false`), listed in discovery. Returns the {@link ApiServerResourceRef} for the typed object API.
   */
  registerResource(def: ResourceDefinition): ApiServerResourceRef {
    this.#assertOpen();
    if (def.group === '')
      throw new OptionsError('ApiServer', 'registerResource: the core group serves built-in kinds only; give a group');
    this.#catalog.add(customResource(def));
    return { group: def.group, version: def.version, plural: def.plural };
  }

  // ---------------------------------------------------------------- test controls

  /**
   * Compacts history up to `revision` (default: the newest): Exact lists and continue tokens below
   * it get 410, and so do watches — the watch cache window moves with it — unless
   * `keepWatchCache: true`, with which a `cached` server still replays watches from those resourceVersions out of its window
   * (as a real watch cache does after an etcd compaction) and only an `uncached` one answers 410.
   * Returns the compacted revision.
   */
  compact(revision?: number, opts: { keepWatchCache?: boolean | undefined } = {}): number {
    return this.#store.compact(revision, opts.keepWatchCache === true);
  }

  /** Ends every open watch: cleanly by default (clients read EOF), or by resetting sockets with `abrupt`. */
  dropWatches(opts: { abrupt?: boolean | undefined } = {}): number {
    return this.#hub.dropAll(opts.abrupt === true);
  }

  /** Stops bytes on every open watch while keeping sockets open; new watches are unaffected. */
  stallWatches(): number {
    return this.#hub.stallAll();
  }

  /** Resumes stalled watches, flushing what they held back. */
  unstallWatches(): number {
    return this.#hub.unstallAll();
  }

  /** Writes a line that is not valid JSON into every open watch. */
  injectMalformedFrame(line = '{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":'): number {
    return this.#hub.writeRawAll(line);
  }

  /** Writes an arbitrary frame (serialized as one JSON line) into every open watch. */
  injectWatchFrame(frame: unknown): number {
    return this.#hub.writeRawAll(JSON.stringify(frame));
  }

  /** Makes the next request(s) of `verb` fail with `status` and the real server's Status body for it. */
  failNext(o: FailNextOptions): void {
    this.#faults.add(o);
  }

  /** Forgets failures queued by {@link failNext} that have not fired. */
  clearFailures(): void {
    this.#faults.clear();
  }

  /** Requests served so far, by verb (failed and injected ones included). */
  requestCounts(): Readonly<Record<ApiServerVerb, number>> {
    return this.#counters.snapshot();
  }

  /** Zeroes {@link requestCounts}. */
  resetRequestCounts(): void {
    this.#counters.reset();
  }

  /**
   * Resolves once at least `count` watches are open, or once `count(openWatchCount)` holds when
   * given a predicate (e.g. `(n) => n === 0`). Rejects after `timeoutMs`.
   */
  waitForWatches(count: number | ((open: number) => boolean) = 1, timeoutMs = 5_000): Promise<void> {
    const cond = typeof count === 'number' ? (): boolean => this.#hub.size >= count : (): boolean => count(this.#hub.size);
    return this.#counters.waitUntil(
      cond,
      timeoutMs,
      typeof count === 'number' ? `${count} open watch(es)` : 'the open watch count',
    );
  }

  /** Resolves once {@link requestCounts}[verb] reaches `count` (rejects after `timeoutMs`). */
  waitForRequests(verb: ApiServerVerb, count: number, timeoutMs = 5_000): Promise<void> {
    return this.#counters.waitUntil(() => this.#counters.get(verb) >= count, timeoutMs, `${count} ${verb} request(s)`);
  }

  #assertOpen(): void {
    if (this.#closed) throw new ApiServerUsageError('RL_APISERVER_CLOSED', 'the embedded apiserver is closed');
  }

  // ---------------------------------------------------------------- typed object API

  /**
   * Creates a namespace (as `kubectl create namespace` would; idempotent for an existing one).
   * HTTP creates into a namespace that does not exist are 404, as on a real cluster.
   */
  createNamespace(name: string, labels: Record<string, string> = {}): ApiServerObject {
    this.#assertOpen();
    const existing = this.#store.get(NAMESPACE_RESOURCE, storageKey('', name));
    if (existing !== undefined) return structuredClone(existing);
    return structuredClone(this.#engine.create(NAMESPACE_RESOURCE, '', { metadata: { name, labels } }, { direct: true }));
  }

  /** Names of the namespaces that exist (terminating ones included). */
  listNamespaces(): string[] {
    return this.#store.listCurrent(NAMESPACE_RESOURCE, undefined).map(([, o]) => o.metadata.name ?? '');
  }

  /** Creates a pod as a client POST would (namespace default `default`, one pause container if none). */
  createPod(pod: PodInput): ApiServerPod {
    this.#assertOpen();
    // The engine copies the body it stores, so only the levels changed here are copied: the caller's
    // object is never written to (a deep copy here too cost a third of a create's CPU).
    const input = pod as ApiServerPod;
    const body: ApiServerPod =
      input.spec?.containers === undefined
        ? { ...input, spec: { ...input.spec, containers: [{ name: 'main', image: DEFAULT_IMAGE }] } }
        : input;
    return this.createObject(POD_REF, body) as ApiServerPod;
  }

  /** The pod, or undefined. */
  getPod(namespace: string, name: string): ApiServerPod | undefined {
    return this.getObject(POD_REF, namespace, name) as ApiServerPod | undefined;
  }

  /** Current pods, optionally of one namespace, in key order. */
  listPods(namespace?: string): ApiServerPod[] {
    return this.listObjects(POD_REF, namespace) as ApiServerPod[];
  }

  /** Read-modify-write without preconditions; spec and status both change (generation follows spec). */
  updatePod(namespace: string, name: string, mutate: (pod: ApiServerPod) => ApiServerPod | void): ApiServerPod {
    return this.updateObject(POD_REF, namespace, name, mutate as (o: ApiServerObject) => ApiServerObject | void) as ApiServerPod;
  }

  /** Deletes as a client DELETE would: bound pods terminate gracefully unless `gracePeriodSeconds: 0`. */
  deletePod(namespace: string, name: string, opts: ApiServerDeleteOptions = {}): ApiServerPod {
    return this.deleteObject(POD_REF, namespace, name, opts) as ApiServerPod;
  }

  /** Creates `count` pods named `<prefix>-<i>` with the given labels (and binds them when `nodeName` is set). */
  seedPods(count: number, opts: SeedPodsOptions = {}): ApiServerPod[] {
    this.#assertOpen();
    const ns = opts.namespace ?? 'default';
    const prefix = opts.namePrefix ?? 'pod';
    const out: ApiServerPod[] = [];
    for (let i = 0; i < count; i++) {
      const name = `${prefix}-${i}`;
      let p = this.createPod({ metadata: { name, namespace: ns, labels: { ...(opts.labels ?? {}) } } });
      if (opts.nodeName !== undefined) p = this.kubelet.bind(ns, name, opts.nodeName);
      out.push(p);
    }
    return out;
  }

  /**
   * Creates manifests as `kubectl create -f` would, each by its `apiVersion`/`kind`: CRDs first
   * (resolving once they are Established and served), then everything else in order; a missing
   * namespace is created. A kind that is not served throws RL_APISERVER_UNKNOWN_RESOURCE; a refused object
   * throws its ApiServerStatusError. Returns the created objects.
   */
  async load(manifests: readonly ApiServerObject[]): Promise<ApiServerObject[]> {
    this.#assertOpen();
    return loadManifests(this.#engine, this.#catalog, manifests);
  }

  // Every object the typed controls hand out is a copy: callers never alias the store.

  /** Creates an object of any served resource (typed-API counterpart of POST). */
  createObject(ref: ApiServerResourceRef, obj: ApiServerObject): ApiServerObject {
    this.#assertOpen();
    const r = this.#catalog.resolve(ref);
    const ns = r.namespaced ? (obj.metadata.namespace ?? 'default') : '';
    return structuredClone(this.#engine.create(r, ns, obj, { direct: true }));
  }

  /** The object, or undefined (`namespace` is ignored for cluster-scoped kinds). */
  getObject(ref: ApiServerResourceRef, namespace: string, name: string): ApiServerObject | undefined {
    const r = this.#catalog.resolve(ref);
    const o = this.#store.get(r, storageKey(r.namespaced ? namespace : '', name));
    return o === undefined ? undefined : structuredClone(o);
  }

  /** Current objects of a resource, optionally one namespace. */
  listObjects(ref: ApiServerResourceRef, namespace?: string): ApiServerObject[] {
    const r = this.#catalog.resolve(ref);
    return this.#store.listCurrent(r, r.namespaced ? namespace : undefined).map(([, o]) => structuredClone(o));
  }

  /** Read-modify-write of any object without preconditions. */
  updateObject(
    ref: ApiServerResourceRef,
    namespace: string,
    name: string,
    mutate: (o: ApiServerObject) => ApiServerObject | void,
  ): ApiServerObject {
    this.#assertOpen();
    const r = this.#catalog.resolve(ref);
    return structuredClone(this.#engine.mutate(r, r.namespaced ? namespace : '', name, (o) => mutate(o) ?? o));
  }

  /** Deletes any object as a client DELETE would. */
  deleteObject(ref: ApiServerResourceRef, namespace: string, name: string, opts: ApiServerDeleteOptions = {}): ApiServerObject {
    this.#assertOpen();
    const r = this.#catalog.resolve(ref);
    return structuredClone(this.#engine.delete(r, r.namespaced ? namespace : '', name, opts).object);
  }

  // ---------------------------------------------------------------- lifecycle

  /** A kubeconfig (YAML) whose current context points at this server with a bearer token. */
  kubeconfig(opts: KubeconfigOptions = {}): string {
    return renderKubeconfig(this.url, {
      name: opts.name ?? 'reconcile-loop',
      namespace: opts.namespace ?? 'default',
      token: opts.token ?? this.#token ?? 'reconcile-loop',
    });
  }

  /** Writes {@link kubeconfig} to `path` (mode 0600). */
  async writeKubeconfig(path: string, opts: KubeconfigOptions = {}): Promise<void> {
    await writeFile(path, this.kubeconfig(opts), { mode: 0o600 });
  }

  /** Ends every watch, stops listening and clears timers. Idempotent. */
  close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    this.#closed = true;
    this.#hub.dropAll(false);
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    for (const c of this.#inflight) c.abort();
    this.#closing = new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
    return this.#closing;
  }

  /** `await using server = await startApiServer()` closes it at scope exit. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Starts the embedded apiserver on loopback (an ephemeral port unless `port` is given). */
export async function startApiServer(options: ApiServerOptions = {}): Promise<ApiServer> {
  const server = createServer();
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return construct(server, options);
}
