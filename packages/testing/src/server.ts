import { randomInt } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeContinue, encodeContinue } from './continue.js';
import { ApiServerUsageError, ApiStatusError, isApiStatusError } from './errors.js';
import { renderKubeconfig, type KubeconfigOptions } from './kubeconfig.js';
import { KubeletEmulator } from './kubelet.js';
import { Registry, type DeleteOptions, type PatchType } from './registry.js';
import { POD_RESOURCE, apiResourceList, customResource, type ResourceDefinition, type ResourceType } from './resources.js';
import { SelectorParseError, parseFieldSelector, parseLabelSelector, matchesFields, matchesLabels, type FieldRequirement, type LabelRequirement } from './selectors.js';
import {
  EXPIRED_LIST_MESSAGE,
  INCONSISTENT_CONTINUE_MESSAGE,
  badRequest,
  deleteSuccess,
  entityTooLarge,
  expired,
  failure,
  forbidden,
  internalError,
  invalid,
  methodNotAllowed,
  notSupported,
  pathNotFound,
  tooLargeResourceVersion,
  tooManyRequests,
  tooOldWatch,
  unauthorized,
  unsupportedMediaType,
  type FieldError,
  type KubeStatus,
} from './status.js';
import { MvccStore } from './store.js';
import { acceptsTable, toTable, type IncludeObject } from './table.js';
import type { KubeObject, Pod } from './types.js';
import { WatchConnection } from './watch.js';

/** Request verbs as the apiserver's audit and metrics name them (plus `discovery` for everything else). */
export type Verb = 'list' | 'watch' | 'get' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection' | 'discovery';

/**
 * The failures {@link ApiServer.failNext} can inject: an HTTP status answered with the real server's
 * Status body for it, or `'hang'` (the request is accepted and never answered until the client gives up
 * or the server closes: a LIST or WATCH stuck behind a wedged backend).
 */
export type InjectedStatus = 400 | 401 | 403 | 404 | 410 | 422 | 429 | 500 | 504 | 'hang';

const INJECTABLE: ReadonlySet<unknown> = new Set<InjectedStatus>([400, 401, 403, 404, 410, 422, 429, 500, 504, 'hang']);

/** One injected failure for the next request(s) of a verb. */
export interface FailNextOptions {
  verb: Exclude<Verb, 'discovery'>;
  status: InjectedStatus;
  /** How many consecutive requests of that verb fail. Default 1. */
  times?: number;
  /**
   * Watch only: answer 200 and report the failure as an in-band ERROR frame, as the real server
   * reports errors found after the watch started (410 for an expired version in particular).
   * Default false: the HTTP status itself carries the failure.
   */
  inBand?: boolean;
  /** 429 and 504 only: the `Retry-After` header and `details.retryAfterSeconds`. Default 1. */
  retryAfterSeconds?: number;
}

/** How a watch from a resourceVersion newer than the store behaves. */
export type FutureWatchBehavior = 'error' | 'wait';

/** Options for {@link startApiServer}. */
export interface ApiServerOptions {
  /** TCP port; 0 (default) picks an ephemeral port. */
  port?: number;
  /** Listen address. Default 127.0.0.1. */
  host?: string;
  /** When set, every request must carry `Authorization: Bearer <token>` (401 otherwise). Default: any or none. */
  token?: string;
  /** Period of BOOKMARK frames on watches that allow them. Default 60 000 (the watch cache's minute). */
  bookmarkIntervalMs?: number;
  /** A bookmark is sent this long before a watch's deadline. Default 2 000 (the watch cache's 2 s). */
  bookmarkBeforeTimeoutMs?: number;
  /** Milliseconds one unit of `timeoutSeconds` lasts. Default 1 000; tests shrink it. */
  timeoutSecondsScaleMs?: number;
  /** Watches without `timeoutSeconds` end after a random [min, 2·min) seconds, as `--min-request-timeout`. Default 1 800. */
  minRequestTimeoutSeconds?: number;
  /** How long a request for a future resourceVersion waits for it before the 504. Default 3 000 (the watch cache's blockTimeout). */
  tooLargeResourceVersionWaitMs?: number;
  /** A watch from a future resourceVersion: `error` (default) waits as above then sends an in-band 504 ERROR; `wait` waits silently for the revision. */
  futureWatch?: FutureWatchBehavior;
  /** History retained for watch replay and exact reads; older writes are compacted. Default 10 000. */
  maxHistory?: number;
  /** Clock for timestamps and ages. Default `() => new Date()`. */
  now?: () => Date;
  /** When set, a bound pod given a `deletionTimestamp` is finished (as a kubelet would) after this many ms. */
  kubeletAutoFinishDeleteMs?: number;
  /** `/version` numbers. Default 1.32 (the kubectl this project installs). */
  version?: { major: string; minor: string; gitVersion: string };
}

/** Names one served resource for the typed object API: `{ group: '', plural: 'pods' }` or a registered one. */
export interface ResourceRef {
  group: string;
  plural: string;
  version?: string;
}

/** A pod as {@link ApiServer.createPod} accepts it: containers default to one pause container. */
export type PodInput = Omit<Pod, 'metadata'> & { metadata: Pod['metadata'] & { name?: string; namespace?: string } };

/** Options for {@link ApiServer.seedPods}. */
export interface SeedPodsOptions {
  namespace?: string;
  labels?: Record<string, string>;
  /** Names are `<namePrefix>-<i>`. Default `pod`. */
  namePrefix?: string;
  /** Bind every pod to this node. */
  nodeName?: string;
}

const MAX_BODY = 3 * 1024 * 1024;
const DEFAULT_IMAGE = 'registry.k8s.io/pause:3.9';
/** The typed controls' name for pods; `resource()` maps it to POD_RESOURCE without a scan. */
const POD_REF: ResourceRef = { group: '', plural: 'pods' };
const ALL_VERBS: Verb[] = ['list', 'watch', 'get', 'create', 'update', 'patch', 'delete', 'deletecollection', 'discovery'];

function parseBool(v: string | null): boolean | undefined | 'invalid' {
  if (v === null) return undefined;
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False', ''].includes(v)) return false;
  return 'invalid';
}

/** The Content-Type without parameters, lower-cased ('' when absent). */
function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Headers every JSON answer (including watch streams) carries. */
const JSON_HEADERS = { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' } as const;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function listInvalid(errs: FieldError[]): KubeStatus {
  return invalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', errs);
}

interface Route {
  kind: 'collection' | 'item' | 'status';
  resource: ResourceType;
  namespace: string | undefined;
  name?: string;
}

function subresourceOf(route: Route): { subresource?: 'status' } {
  return route.kind === 'status' ? { subresource: 'status' } : {};
}

/**
 * The embedded apiserver: HTTP on loopback plus the typed test controls. Create it with
 * {@link startApiServer}; close it with `close()` or `await using`.
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

  private readonly store: MvccStore;
  private readonly registry: Registry;
  private readonly resources = new Map<string, ResourceType>();
  private readonly watches = new Set<WatchConnection>();
  private readonly counts = new Map<Verb, number>();
  private readonly failures: Array<{ verb: Verb; status: InjectedStatus; inBand: boolean; retryAfterSeconds: number }> = [];
  private readonly waiters = new Set<() => void>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inflight = new Set<AbortController>();
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly now: () => Date;
  private readonly opts: Required<Omit<ApiServerOptions, 'port' | 'host' | 'token' | 'now' | 'kubeletAutoFinishDeleteMs' | 'version'>>;
  private readonly versionInfo: { major: string; minor: string; gitVersion: string };
  private readonly token: string | undefined;

  /** @internal Use {@link startApiServer}. */
  constructor(
    private readonly server: Server,
    options: ApiServerOptions,
  ) {
    const addr = server.address() as AddressInfo;
    this.host = options.host ?? '127.0.0.1';
    this.port = addr.port;
    this.url = `http://${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`;
    this.now = options.now ?? (() => new Date());
    this.opts = {
      bookmarkIntervalMs: options.bookmarkIntervalMs ?? 60_000,
      bookmarkBeforeTimeoutMs: options.bookmarkBeforeTimeoutMs ?? 2_000,
      timeoutSecondsScaleMs: options.timeoutSecondsScaleMs ?? 1_000,
      minRequestTimeoutSeconds: options.minRequestTimeoutSeconds ?? 1_800,
      tooLargeResourceVersionWaitMs: options.tooLargeResourceVersionWaitMs ?? 3_000,
      futureWatch: options.futureWatch ?? 'error',
      maxHistory: options.maxHistory ?? 10_000,
    };
    this.versionInfo = options.version ?? { major: '1', minor: '32', gitVersion: 'v1.32.0+reconcile-loop' };
    this.token = options.token;
    this.store = new MvccStore(this.opts.maxHistory);
    this.registry = new Registry(this.store, this.now);
    this.kubelet = new KubeletEmulator(this.registry, this.now);
    this.resources.set('/v1/pods', POD_RESOURCE);
    for (const v of ALL_VERBS) this.counts.set(v, 0);
    this.store.subscribe((e) => {
      // Fan-out runs inside the writer's request; one broken watch must not fail that write.
      for (const w of [...this.watches]) {
        try {
          w.deliver(e);
        } catch {
          w.drop(true);
        }
      }
    });
    const autoMs = options.kubeletAutoFinishDeleteMs;
    if (autoMs !== undefined) {
      this.store.subscribe((e) => {
        if (!e.resource.isPod || e.type !== 'MODIFIED') return;
        if (e.object.metadata.deletionTimestamp === undefined || e.prev?.metadata.deletionTimestamp !== undefined) return;
        if ((e.object.metadata.deletionGracePeriodSeconds ?? 0) === 0) return;
        const ns = e.object.metadata.namespace ?? '';
        const name = e.object.metadata.name ?? '';
        const t = setTimeout(() => {
          this.timers.delete(t);
          const cur = this.store.get(POD_RESOURCE, `${ns}/${name}`);
          if (cur?.metadata.uid === e.object.metadata.uid && cur?.metadata.deletionTimestamp !== undefined) {
            this.kubelet.finishGracefulDelete(ns, name);
          }
        }, autoMs);
        this.timers.add(t);
      });
    }
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      this.handle(req, res).catch((e: unknown) => this.crash(res, e));
    });
  }

  // ---------------------------------------------------------------- typed controls

  /** The newest revision (every write bumps it; `resourceVersion` is its decimal string). */
  get revision(): number {
    return this.store.revision;
  }

  /** Watches from below this revision get 410; exact reads below it too. */
  get compactedRevision(): number {
    return this.store.compactedRevision;
  }

  /** Watches currently streaming. */
  get openWatchCount(): number {
    return this.watches.size;
  }

  /**
   * Serves a namespaced kind at `/apis/{group}/{version}/namespaces/{ns}/{plural}`, listed in
   * discovery. Returns the {@link ResourceRef} for the typed object API.
   */
  registerResource(def: ResourceDefinition): ResourceRef {
    this.assertOpen();
    if (def.group === '') throw new ApiServerUsageError('ERR_BAD_OPTION', 'registerResource: the core group serves pods only; give a group');
    const key = `${def.group}/${def.version}/${def.plural}`;
    if (this.resources.has(key)) throw new ApiServerUsageError('ERR_BAD_OPTION', `registerResource: ${def.plural}.${def.group}/${def.version} is already registered`);
    this.resources.set(key, customResource(def));
    return { group: def.group, version: def.version, plural: def.plural };
  }

  /** Drops history up to `revision` (default: the newest). Returns the compacted revision. */
  compact(revision?: number): number {
    return this.store.compact(revision);
  }

  /** Ends every open watch: cleanly by default (clients read EOF), or by resetting sockets with `abrupt`. */
  dropWatches(opts: { abrupt?: boolean } = {}): number {
    const all = [...this.watches];
    for (const w of all) w.drop(opts.abrupt === true);
    return all.length;
  }

  /** Stops bytes on every open watch while keeping sockets open; new watches are unaffected. */
  stallWatches(): number {
    let n = 0;
    for (const w of this.watches) {
      if (!w.isStalled) n++;
      w.stall();
    }
    return n;
  }

  /** Resumes stalled watches, flushing what they held back. */
  unstallWatches(): number {
    let n = 0;
    for (const w of [...this.watches]) {
      if (w.isStalled) n++;
      w.unstall();
    }
    return n;
  }

  /** Writes a line that is not valid JSON into every open watch. */
  injectMalformedFrame(line = '{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":'): number {
    for (const w of this.watches) w.writeRaw(line);
    return this.watches.size;
  }

  /** Writes an arbitrary frame (serialized as one JSON line) into every open watch. */
  injectWatchFrame(frame: unknown): number {
    const line = JSON.stringify(frame);
    for (const w of this.watches) w.writeRaw(line);
    return this.watches.size;
  }

  /** Makes the next request(s) of `verb` fail with `status` and the real server's Status body for it. */
  failNext(o: FailNextOptions): void {
    const times = o.times ?? 1;
    if (!Number.isInteger(times) || times < 1) throw new ApiServerUsageError('ERR_BAD_OPTION', 'failNext: times must be a positive integer');
    if (!INJECTABLE.has(o.status)) throw new ApiServerUsageError('ERR_BAD_OPTION', `failNext: unsupported status ${String(o.status)}`);
    const retryAfterSeconds = o.retryAfterSeconds ?? 1;
    if (!Number.isInteger(retryAfterSeconds) || retryAfterSeconds < 0) throw new ApiServerUsageError('ERR_BAD_OPTION', 'failNext: retryAfterSeconds must be an integer >= 0');
    for (let i = 0; i < times; i++) this.failures.push({ verb: o.verb, status: o.status, inBand: o.inBand === true && o.verb === 'watch' && o.status !== 'hang', retryAfterSeconds });
  }

  /** Forgets failures queued by {@link failNext} that have not fired. */
  clearFailures(): void {
    this.failures.length = 0;
  }

  /** Requests served so far, by verb (failed and injected ones included). */
  requestCounts(): Readonly<Record<Verb, number>> {
    const out = {} as Record<Verb, number>;
    for (const v of ALL_VERBS) out[v] = this.counts.get(v) ?? 0;
    return out;
  }

  /** Zeroes {@link requestCounts}. */
  resetRequestCounts(): void {
    for (const v of ALL_VERBS) this.counts.set(v, 0);
  }

  private waitUntil(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (cond()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!cond()) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  /**
   * Resolves once at least `count` watches are open, or once `count(openWatchCount)` holds when
   * given a predicate (e.g. `(n) => n === 0`). Rejects after `timeoutMs`.
   */
  waitForWatches(count: number | ((open: number) => boolean) = 1, timeoutMs = 5_000): Promise<void> {
    const cond = typeof count === 'number' ? (): boolean => this.watches.size >= count : (): boolean => count(this.watches.size);
    return this.waitUntil(cond, timeoutMs, typeof count === 'number' ? `${count} open watch(es)` : 'the open watch count');
  }

  /** Resolves once {@link requestCounts}[verb] reaches `count` (rejects after `timeoutMs`). */
  waitForRequests(verb: Verb, count: number, timeoutMs = 5_000): Promise<void> {
    return this.waitUntil(() => (this.counts.get(verb) ?? 0) >= count, timeoutMs, `${count} ${verb} request(s)`);
  }

  private resource(ref: ResourceRef): ResourceType {
    if (ref.group === '' && ref.plural === 'pods') return POD_RESOURCE;
    for (const r of this.resources.values()) {
      if (r.group === ref.group && r.plural === ref.plural && (ref.version === undefined || r.version === ref.version)) return r;
    }
    throw new ApiServerUsageError('ERR_UNKNOWN_RESOURCE', `no resource ${ref.plural}.${ref.group} is registered`);
  }

  /** Served API groups and their versions, in registration order (derived: `resources` is the one record). */
  private groups(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const r of this.resources.values()) {
      if (r.group === '') continue;
      const versions = out.get(r.group) ?? [];
      if (!versions.includes(r.version)) versions.push(r.version);
      out.set(r.group, versions);
    }
    return out;
  }

  private assertOpen(): void {
    if (this.closed) throw new ApiServerUsageError('ERR_APISERVER_CLOSED', 'the embedded apiserver is closed');
  }

  /** Creates a pod as a client POST would (namespace default `default`, one pause container if none). */
  createPod(pod: PodInput): Pod {
    this.assertOpen();
    const body = structuredClone(pod) as Pod;
    body.spec ??= {};
    if (body.spec.containers === undefined) body.spec.containers = [{ name: 'main', image: DEFAULT_IMAGE }];
    return this.createObject(POD_REF, body) as Pod;
  }

  /** The pod, or undefined. */
  getPod(namespace: string, name: string): Pod | undefined {
    return this.getObject(POD_REF, namespace, name) as Pod | undefined;
  }

  /** Current pods, optionally of one namespace, in key order. */
  listPods(namespace?: string): Pod[] {
    return this.listObjects(POD_REF, namespace) as Pod[];
  }

  /** Read-modify-write without preconditions; spec and status both change (generation follows spec). */
  updatePod(namespace: string, name: string, mutate: (pod: Pod) => Pod | void): Pod {
    return this.updateObject(POD_REF, namespace, name, mutate as (o: KubeObject) => KubeObject | void) as Pod;
  }

  /** Deletes as a client DELETE would: bound pods terminate gracefully unless `gracePeriodSeconds: 0`. */
  deletePod(namespace: string, name: string, opts: DeleteOptions = {}): Pod {
    return this.deleteObject(POD_REF, namespace, name, opts) as Pod;
  }

  /** Creates `count` pods named `<prefix>-<i>` with the given labels (and binds them when `nodeName` is set). */
  seedPods(count: number, opts: SeedPodsOptions = {}): Pod[] {
    this.assertOpen();
    const ns = opts.namespace ?? 'default';
    const prefix = opts.namePrefix ?? 'pod';
    const out: Pod[] = [];
    for (let i = 0; i < count; i++) {
      const name = `${prefix}-${i}`;
      let p = this.createPod({ metadata: { name, namespace: ns, labels: { ...(opts.labels ?? {}) } } });
      if (opts.nodeName !== undefined) p = this.kubelet.bind(ns, name, opts.nodeName);
      out.push(p);
    }
    return out;
  }

  // Every object the typed controls hand out is a copy: callers never alias the store.

  /** Creates an object of any served resource (typed-API counterpart of POST). */
  createObject(ref: ResourceRef, obj: KubeObject): KubeObject {
    this.assertOpen();
    const r = this.resource(ref);
    return structuredClone(this.registry.create(r, obj.metadata.namespace ?? 'default', obj, { direct: true }));
  }

  /** The object, or undefined. */
  getObject(ref: ResourceRef, namespace: string, name: string): KubeObject | undefined {
    const o = this.store.get(this.resource(ref), `${namespace}/${name}`);
    return o === undefined ? undefined : structuredClone(o);
  }

  /** Current objects of a resource, optionally one namespace. */
  listObjects(ref: ResourceRef, namespace?: string): KubeObject[] {
    return this.store.listCurrent(this.resource(ref), namespace).map(([, o]) => structuredClone(o));
  }

  /** Read-modify-write of any object without preconditions. */
  updateObject(ref: ResourceRef, namespace: string, name: string, mutate: (o: KubeObject) => KubeObject | void): KubeObject {
    this.assertOpen();
    return structuredClone(this.registry.mutate(this.resource(ref), namespace, name, (o) => mutate(o) ?? o));
  }

  /** Deletes any object as a client DELETE would. */
  deleteObject(ref: ResourceRef, namespace: string, name: string, opts: DeleteOptions = {}): KubeObject {
    this.assertOpen();
    return structuredClone(this.registry.delete(this.resource(ref), namespace, name, opts).object);
  }

  /** A kubeconfig (YAML) whose current context points at this server with a bearer token. */
  kubeconfig(opts: KubeconfigOptions = {}): string {
    return renderKubeconfig(this.url, {
      name: opts.name ?? 'reconcile-loop',
      namespace: opts.namespace ?? 'default',
      token: opts.token ?? this.token ?? 'reconcile-loop',
    });
  }

  /** Writes {@link kubeconfig} to `path` (mode 0600). */
  async writeKubeconfig(path: string, opts: KubeconfigOptions = {}): Promise<void> {
    await writeFile(path, this.kubeconfig(opts), { mode: 0o600 });
  }

  /** Ends every watch, stops listening and clears timers. Idempotent. */
  close(): Promise<void> {
    if (this.closing !== undefined) return this.closing;
    this.closed = true;
    for (const w of [...this.watches]) w.drop(false);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const c of this.inflight) c.abort();
    this.closing = new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    return this.closing;
  }

  /** `await using server = await startApiServer()` closes it at scope exit. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // ---------------------------------------------------------------- HTTP

  private crash(res: ServerResponse, e: unknown): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const msg = e instanceof Error ? e.message : String(e);
    this.send(res, internalError(msg));
  }

  private sendJson(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
    const text = JSON.stringify(body);
    res.writeHead(code, {
      ...JSON_HEADERS,
      'Content-Length': String(Buffer.byteLength(text)),
      ...headers,
    });
    res.end(text);
  }

  private send(res: ServerResponse, s: KubeStatus): void {
    const headers: Record<string, string> = {};
    const retry = s.details?.retryAfterSeconds;
    if ((s.code === 429 || s.code === 504 || s.code === 503) && retry !== undefined) headers['Retry-After'] = String(retry);
    this.sendJson(res, s.code, s, headers);
  }

  private count(v: Verb): void {
    this.counts.set(v, (this.counts.get(v) ?? 0) + 1);
    this.notify();
  }

  private takeFailure(v: Verb): { status: InjectedStatus; inBand: boolean; retryAfterSeconds: number } | undefined {
    const i = this.failures.findIndex((f) => f.verb === v);
    if (i < 0) return undefined;
    return this.failures.splice(i, 1)[0];
  }

  private injectedStatus(status: Exclude<InjectedStatus, 'hang'>, verb: Verb, requestedRv: string, retryAfterSeconds: number, r: ResourceType): KubeStatus {
    const qualified = r.group === '' ? r.plural : `${r.plural}.${r.group}`;
    switch (status) {
      case 400:
        return badRequest('injected failure: the server rejected the request');
      case 401:
        return unauthorized();
      case 403:
        return failure(403, 'Forbidden', `${qualified} is forbidden: User "system:serviceaccount:default:injected" cannot ${verb} resource "${r.plural}" in API group "${r.group}"`, { kind: r.plural, ...(r.group === '' ? {} : { group: r.group }) });
      case 404:
        return pathNotFound();
      case 422:
        return failure(422, 'Invalid', 'injected failure: the request is invalid', {});
      case 500:
        return internalError('injected failure');
      case 429:
        return tooManyRequests(retryAfterSeconds);
      case 410: {
        if (verb === 'watch') {
          const n = /^\d+$/.test(requestedRv) ? Number(requestedRv) : 0;
          return tooOldWatch(n, this.store.compactedRevision);
        }
        return expired(EXPIRED_LIST_MESSAGE);
      }
      case 504: {
        const n = /^\d+$/.test(requestedRv) ? Number(requestedRv) : this.store.revision + 1;
        return tooLargeResourceVersion(Math.max(n, this.store.revision + 1), this.store.revision, retryAfterSeconds);
      }
    }
  }

  private readBody(req: IncomingMessage): Promise<Buffer | KubeStatus> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let tooBig = false;
      req.on('data', (c: Buffer) => {
        if (tooBig) return;
        size += c.length;
        if (size > MAX_BODY) {
          tooBig = true;
          chunks.length = 0;
          resolve(entityTooLarge(MAX_BODY));
          return;
        }
        chunks.push(c);
      });
      req.on('end', () => {
        if (!tooBig) resolve(Buffer.concat(chunks));
      });
      req.on('error', reject);
    });
  }

  private async readJson(req: IncomingMessage, optional: boolean): Promise<unknown> {
    const body = await this.readBody(req);
    if (!Buffer.isBuffer(body)) throw new ApiStatusError(body);
    const text = body.toString('utf8');
    if (text.trim() === '') {
      if (optional) return undefined;
      throw new ApiStatusError(badRequest('the body of the request was empty'));
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (e) {
      throw new ApiStatusError(badRequest(`the body of the request could not be decoded as JSON: ${(e as Error).message}`));
    }
  }

  private route(segments: string[]): Route | 'not-found' {
    let rest: string[];
    let gv: string;
    if (segments[0] === 'api' && segments[1] === 'v1') {
      gv = '/v1';
      rest = segments.slice(2);
    } else if (segments[0] === 'apis' && segments.length >= 4) {
      gv = `${segments[1]}/${segments[2]}`;
      rest = segments.slice(3);
    } else return 'not-found';
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const resource = this.resources.get(`${gv}/${rest[0] ?? ''}`);
    if (resource === undefined) return 'not-found';
    if (rest.length === 1) return { kind: 'collection', resource, namespace };
    if (namespace === undefined) return 'not-found';
    if (rest.length === 2) return { kind: 'item', resource, namespace, name: rest[1]! };
    if (rest.length === 3 && rest[2] === 'status' && resource.statusSubresource) return { kind: 'status', resource, namespace, name: rest[1]! };
    return 'not-found';
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      await this.dispatch(req, res);
    } catch (e) {
      if (isApiStatusError(e)) {
        if (!res.headersSent) this.send(res, e.status);
        else res.destroy();
        return;
      }
      if (e instanceof SelectorParseError) {
        if (!res.headersSent) this.send(res, badRequest(e.message));
        return;
      }
      throw e;
    }
  }

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.closed) {
      this.send(res, failure(503, 'ServiceUnavailable', 'the embedded apiserver is shutting down'));
      return;
    }
    if (this.token !== undefined && req.headers.authorization !== `Bearer ${this.token}`) {
      this.send(res, unauthorized());
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    let segments: string[];
    try {
      segments = url.pathname.split('/').filter((s) => s !== '').map((s) => decodeURIComponent(s));
    } catch {
      this.send(res, badRequest('malformed path'));
      return;
    }
    const method = req.method ?? 'GET';
    const q = url.searchParams;

    if (this.discovery(segments, method, res)) return;

    const route = this.route(segments);
    if (route === 'not-found') {
      this.count('discovery');
      this.send(res, pathNotFound());
      return;
    }
    const watch = parseBool(q.get('watch'));
    if (watch === 'invalid') {
      this.send(res, badRequest(`invalid value for watch: ${q.get('watch') ?? ''}`));
      return;
    }
    let verb: Verb;
    if (method === 'GET') verb = watch === true ? 'watch' : route.kind === 'collection' ? 'list' : 'get';
    else if (method === 'POST' && route.kind === 'collection' && route.namespace !== undefined) verb = 'create';
    else if (method === 'PUT' && route.kind !== 'collection') verb = 'update';
    else if (method === 'PATCH' && route.kind !== 'collection') verb = 'patch';
    else if (method === 'DELETE' && route.kind === 'item') verb = 'delete';
    else if (method === 'DELETE' && route.kind === 'collection' && route.namespace !== undefined) verb = 'deletecollection';
    else {
      this.count('discovery');
      this.send(res, methodNotAllowed());
      return;
    }
    this.count(verb);
    const injected = this.takeFailure(verb);
    if (injected !== undefined) {
      // A hung request holds its socket until the client aborts or close() ends every connection.
      if (injected.status === 'hang') return;
      const s = this.injectedStatus(injected.status, verb, q.get('resourceVersion') ?? '', injected.retryAfterSeconds, route.resource);
      if (injected.inBand) {
        res.writeHead(200, JSON_HEADERS);
        res.end(`${JSON.stringify({ type: 'ERROR', object: s })}\n`);
      } else this.send(res, s);
      return;
    }
    const dryRun = q.getAll('dryRun').filter((d) => d !== '');
    if (dryRun.length > 0) {
      this.send(res, badRequest('dryRun is not supported by the embedded apiserver'));
      return;
    }
    const r = route.resource;
    const ns = route.namespace;
    switch (verb) {
      case 'list':
        return this.serveList(req, res, r, ns, q);
      case 'watch':
        return this.serveWatch(req, res, r, ns, route.name, q);
      case 'get': {
        const obj = this.registry.get(r, ns!, route.name!);
        const table = acceptsTable(req.headers.accept);
        if (table !== undefined) {
          this.sendJson(
            res,
            200,
            toTable(r, [obj], { include: this.includeObject(q), version: table, resourceVersion: obj.metadata.resourceVersion ?? '', withColumns: true, now: this.now() }),
          );
        } else this.sendJson(res, 200, obj);
        return;
      }
      case 'create': {
        this.checkContentType(req, ['application/json']);
        const body = await this.readJson(req, false);
        this.sendJson(res, 201, this.registry.create(r, ns!, body));
        return;
      }
      case 'update': {
        this.checkContentType(req, ['application/json']);
        const body = await this.readJson(req, false);
        this.sendJson(res, 200, this.registry.update(r, ns!, route.name!, body, subresourceOf(route)));
        return;
      }
      case 'patch': {
        const type = this.patchType(req, r);
        const body = await this.readJson(req, false);
        this.sendJson(res, 200, this.registry.patch(r, ns!, route.name!, type, body, subresourceOf(route)));
        return;
      }
      case 'delete': {
        const opts = await this.deleteOptions(req, q);
        const out = this.registry.delete(r, ns!, route.name!, opts);
        if (out.deleted && !r.returnDeletedObject) this.sendJson(res, 200, deleteSuccess(r, route.name!, out.object.metadata.uid));
        else this.sendJson(res, 200, out.object);
        return;
      }
      case 'deletecollection': {
        const opts = await this.deleteOptions(req, q);
        const { labels, fields } = this.selectors(r, q);
        const deleted: KubeObject[] = [];
        for (const [, o] of this.store.listCurrent(r, ns!)) {
          if (!this.selected(r, o, labels, fields)) continue;
          try {
            deleted.push(this.registry.delete(r, ns!, o.metadata.name ?? '', opts).object);
          } catch (e) {
            if (!isApiStatusError(e) || e.status.code !== 404) throw e;
          }
        }
        this.sendJson(res, 200, this.listBody(r, deleted, String(this.store.revision), undefined, undefined));
        return;
      }
    }
  }

  private discovery(segments: string[], method: string, res: ServerResponse): boolean {
    const path = segments.join('/');
    const isDiscovery =
      path === 'version' ||
      path === 'api' ||
      path === 'api/v1' ||
      path === 'apis' ||
      path === 'healthz' ||
      path === 'livez' ||
      path === 'readyz' ||
      (segments[0] === 'apis' && (segments.length === 2 || segments.length === 3)) ||
      (segments[0] === 'api' && segments[1] === 'v1' && segments[2] === 'namespaces' && segments.length === 4);
    if (!isDiscovery) return false;
    this.count('discovery');
    if (method !== 'GET') {
      this.send(res, methodNotAllowed());
      return true;
    }
    if (path === 'healthz' || path === 'livez' || path === 'readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('ok');
      return true;
    }
    if (path === 'version') {
      this.sendJson(res, 200, {
        ...this.versionInfo,
        gitCommit: '0000000000000000000000000000000000000000',
        gitTreeState: 'clean',
        buildDate: '2025-01-01T00:00:00Z',
        goVersion: 'go1.23.0',
        compiler: 'gc',
        platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
      });
      return true;
    }
    if (path === 'api') {
      this.sendJson(res, 200, {
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `${this.host}:${this.port}` }],
      });
      return true;
    }
    if (path === 'api/v1') {
      this.sendJson(res, 200, apiResourceList('v1', [POD_RESOURCE]));
      return true;
    }
    if (segments[2] === 'namespaces' && segments.length === 4) {
      // Every namespace exists here; kubectl occasionally reads one.
      this.sendJson(res, 200, { kind: 'Namespace', apiVersion: 'v1', metadata: { name: segments[3] }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } });
      return true;
    }
    const groups = this.groups();
    const groupDoc = (g: string): Record<string, unknown> => {
      const versions = (groups.get(g) ?? []).map((v) => ({ groupVersion: `${g}/${v}`, version: v }));
      return { name: g, versions, preferredVersion: versions[0] };
    };
    if (path === 'apis') {
      this.sendJson(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: [...groups.keys()].map(groupDoc) });
      return true;
    }
    const g = segments[1]!;
    if (!groups.has(g)) {
      this.send(res, pathNotFound());
      return true;
    }
    if (segments.length === 2) {
      this.sendJson(res, 200, { kind: 'APIGroup', apiVersion: 'v1', ...groupDoc(g) });
      return true;
    }
    const v = segments[2]!;
    const served = [...this.resources.values()].filter((r) => r.group === g && r.version === v);
    if (served.length === 0) {
      this.send(res, pathNotFound());
      return true;
    }
    this.sendJson(res, 200, apiResourceList(`${g}/${v}`, served));
    return true;
  }

  private checkContentType(req: IncomingMessage, accepted: string[]): void {
    const ct = mediaType(req);
    if (ct === '' || ct === '*/*' || accepted.includes(ct)) return;
    throw new ApiStatusError(unsupportedMediaType(accepted));
  }

  private patchType(req: IncomingMessage, r: ResourceType): PatchType {
    const ct = mediaType(req);
    if (ct === 'application/merge-patch+json') return 'merge';
    if (ct === 'application/json-patch+json') return 'json';
    if (ct === 'application/strategic-merge-patch+json' && r.isPod) return 'strategic';
    const accepted = ['application/json-patch+json', 'application/merge-patch+json'];
    if (r.isPod) accepted.push('application/strategic-merge-patch+json');
    throw new ApiStatusError(unsupportedMediaType(accepted));
  }

  private async deleteOptions(req: IncomingMessage, q: URLSearchParams): Promise<DeleteOptions> {
    const opts: DeleteOptions = {};
    const g = q.get('gracePeriodSeconds');
    if (g !== null && g !== '') {
      if (!/^-?\d+$/.test(g)) throw new ApiStatusError(badRequest(`invalid value for gracePeriodSeconds: ${g}`));
      opts.gracePeriodSeconds = Number(g);
    }
    const body = await this.readJson(req, true);
    if (body !== undefined) {
      if (!isRecord(body)) throw new ApiStatusError(badRequest('DeleteOptions must be a JSON object'));
      const bg = body['gracePeriodSeconds'];
      if (bg !== undefined && bg !== null) {
        if (typeof bg !== 'number' || !Number.isInteger(bg)) throw new ApiStatusError(badRequest('gracePeriodSeconds must be an integer'));
        opts.gracePeriodSeconds = bg;
      }
      const pre = body['preconditions'];
      if (isRecord(pre)) {
        const p: { uid?: string; resourceVersion?: string } = {};
        if (typeof pre['uid'] === 'string') p.uid = pre['uid'];
        if (typeof pre['resourceVersion'] === 'string') p.resourceVersion = pre['resourceVersion'];
        opts.preconditions = p;
      }
    }
    return opts;
  }

  private includeObject(q: URLSearchParams): IncludeObject {
    const v = q.get('includeObject');
    if (v === 'None' || v === 'Object' || v === 'Metadata') return v;
    if (v === null || v === '') return 'Metadata';
    throw new ApiStatusError(badRequest(`includeObject must be one of None, Metadata, Object: ${v}`));
  }

  private selectors(r: ResourceType, q: URLSearchParams): { labels: LabelRequirement[]; fields: FieldRequirement[] } {
    return {
      labels: parseLabelSelector(q.get('labelSelector') ?? ''),
      fields: parseFieldSelector(q.get('fieldSelector') ?? '', r.supportedFields, (f) => r.unknownFieldMessage(f)),
    };
  }

  private selected(r: ResourceType, o: KubeObject, labels: LabelRequirement[], fields: FieldRequirement[]): boolean {
    if (!matchesLabels(labels, o.metadata.labels)) return false;
    return fields.length === 0 || matchesFields(fields, r.fieldSet(o));
  }

  private parseRv(rv: string): number {
    if (!/^\d+$/.test(rv)) throw new ApiStatusError(badRequest(`invalid resource version: ${JSON.stringify(rv)}`));
    return Number(rv);
  }

  /** Waits for a future revision as the watch cache does, then answers 504 "Too large resource version". */
  private async awaitRevision(n: number, req: IncomingMessage): Promise<void> {
    if (n <= this.store.revision) return;
    const ac = new AbortController();
    this.inflight.add(ac);
    const onClose = (): void => ac.abort();
    req.on('close', onClose);
    try {
      const ok = await this.store.waitForRevision(n, this.opts.tooLargeResourceVersionWaitMs, ac.signal);
      if (!ok) throw new ApiStatusError(tooLargeResourceVersion(n, this.store.revision, 1));
    } finally {
      req.off('close', onClose);
      this.inflight.delete(ac);
    }
  }

  private listBody(r: ResourceType, items: KubeObject[], rv: string, cont: string | undefined, remaining: number | undefined): Record<string, unknown> {
    const metadata: Record<string, unknown> = { resourceVersion: rv };
    if (cont !== undefined) metadata['continue'] = cont;
    if (remaining !== undefined) metadata['remainingItemCount'] = remaining;
    const out = r.listItemsCarryType
      ? items
      : items.map((o) => {
          const { kind: _k, apiVersion: _a, ...rest } = o;
          return rest;
        });
    return { kind: r.listKind, apiVersion: r.apiVersion, metadata, items: out };
  }

  /**
   * LIST with the apiserver's resourceVersion rules: "" reads the newest state; "0" and a bare
   * version (NotOlderThan) read the newest state once it is at least that new; Exact — or a bare
   * version with `limit`, the legacy rule — reads the state at that revision (410 once compacted).
   * Continue tokens pin the first page's revision.
   */
  private async serveList(req: IncomingMessage, res: ServerResponse, r: ResourceType, ns: string | undefined, q: URLSearchParams): Promise<void> {
    const rv = q.get('resourceVersion') ?? '';
    const match = q.get('resourceVersionMatch') ?? '';
    const cont = q.get('continue') ?? '';
    const limitText = q.get('limit') ?? '';
    const errs: FieldError[] = [];
    if (match !== '') {
      if (rv === '') errs.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
      if (cont !== '') errs.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
      if (match !== 'Exact' && match !== 'NotOlderThan') errs.push(notSupported('resourceVersionMatch', match, ['Exact', 'NotOlderThan', '']));
      if (match === 'Exact' && rv === '0') errs.push(forbidden('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
    }
    if (q.get('sendInitialEvents') !== null) errs.push(forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
    if (errs.length > 0) throw new ApiStatusError(listInvalid(errs));
    let limit = 0;
    if (limitText !== '') {
      if (!/^-?\d+$/.test(limitText)) throw new ApiStatusError(badRequest(`invalid value for limit: ${limitText}`));
      limit = Math.max(0, Number(limitText));
    }
    const { labels, fields } = this.selectors(r, q);
    const table = acceptsTable(req.headers.accept);
    const include = this.includeObject(q);

    let at: number;
    let startKey: string | undefined;
    // A token minted by the 410 "inconsistent continue" answer (rv -1) keeps minting -1 tokens.
    let inconsistentContinue = false;
    const prefix = ns === undefined ? '' : `${ns}/`;
    if (cont !== '') {
      if (rv !== '' && rv !== '0') throw new ApiStatusError(badRequest('specifying resource version is not allowed when using continue'));
      const token = decodeContinue(cont);
      if (typeof token === 'string') throw new ApiStatusError(badRequest(token));
      startKey = prefix + token.start;
      inconsistentContinue = token.rv < 0;
      if (token.rv > 0) {
        if (token.rv < this.store.compactedRevision) {
          const s = expired(INCONSISTENT_CONTINUE_MESSAGE);
          s.metadata = { continue: encodeContinue(-1, token.start) };
          throw new ApiStatusError(s);
        }
        if (token.rv > this.store.revision) throw new ApiStatusError(badRequest('continue key is not valid: resourceVersion from the future'));
        at = token.rv;
      } else at = this.store.revision;
    } else if (rv === '') {
      at = this.store.revision;
    } else {
      const n = this.parseRv(rv);
      const exact = match === 'Exact' || (match === '' && limit > 0 && rv !== '0');
      await this.awaitRevision(n, req);
      if (exact) {
        if (n < this.store.compactedRevision) throw new ApiStatusError(expired(EXPIRED_LIST_MESSAGE));
        at = n;
      } else at = this.store.revision;
    }

    const all = this.store.listAt(r, ns, at).filter(([k, o]) => (startKey === undefined || k >= startKey) && this.selected(r, o, labels, fields));
    let page = all;
    let next: string | undefined;
    let remaining: number | undefined;
    if (limit > 0 && all.length > limit) {
      page = all.slice(0, limit);
      const lastKey = page[page.length - 1]![0];
      next = encodeContinue(inconsistentContinue ? -1 : at, `${lastKey.slice(prefix.length)}\u0000`);
      if (labels.length === 0 && fields.length === 0) remaining = all.length - limit;
    }
    const items = page.map(([, o]) => o);
    if (table !== undefined) {
      const opts: Parameters<typeof toTable>[2] = { include, version: table, resourceVersion: String(at), withColumns: true, now: this.now() };
      if (next !== undefined) opts.continueToken = next;
      if (remaining !== undefined) opts.remainingItemCount = remaining;
      this.sendJson(res, 200, toTable(r, items, opts));
      return;
    }
    this.sendJson(res, 200, this.listBody(r, items, String(at), next, remaining));
  }

  /**
   * WATCH: "" and "0" start with ADDED frames for the current state; a version replays history
   * after it (an in-band 410 ERROR once compacted); a future version waits, then an in-band 504
   * ERROR (or keeps waiting with `futureWatch: 'wait'`). `timeoutSeconds` ends the stream cleanly.
   */
  private async serveWatch(
    req: IncomingMessage,
    res: ServerResponse,
    r: ResourceType,
    ns: string | undefined,
    name: string | undefined,
    q: URLSearchParams,
  ): Promise<void> {
    const rv = q.get('resourceVersion') ?? '';
    const match = q.get('resourceVersionMatch') ?? '';
    const sie = parseBool(q.get('sendInitialEvents'));
    const bookmarks = parseBool(q.get('allowWatchBookmarks'));
    if (sie === 'invalid' || bookmarks === 'invalid') throw new ApiStatusError(badRequest('invalid boolean query parameter'));
    const errs: FieldError[] = [];
    if (sie === undefined && match !== '') errs.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
    if (sie !== undefined && match !== 'NotOlderThan') {
      errs.push(forbidden('resourceVersionMatch', 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'));
    }
    if (sie === true && bookmarks !== true) errs.push(forbidden('allowWatchBookmarks', 'allowWatchBookmarks must be true when sendInitialEvents is true'));
    if (errs.length > 0) throw new ApiStatusError(listInvalid(errs));
    const t = q.get('timeoutSeconds');
    let deadlineMs: number;
    if (t !== null && t !== '' && t !== '0') {
      if (!/^\d+$/.test(t)) throw new ApiStatusError(badRequest(`invalid value for timeoutSeconds: ${t}`));
      deadlineMs = Number(t) * this.opts.timeoutSecondsScaleMs;
    } else {
      const min = this.opts.minRequestTimeoutSeconds;
      deadlineMs = (min + randomInt(0, Math.max(1, min))) * this.opts.timeoutSecondsScaleMs;
    }
    const sel = this.selectors(r, q);
    const fields = name === undefined ? sel.fields : [...sel.fields, { field: 'metadata.name', op: '=' as const, value: name }];
    const tableVersion = acceptsTable(req.headers.accept);
    const include = this.includeObject(q);
    const requested = rv === '' ? undefined : this.parseRv(rv);

    const startStream = (afterRevision: number): WatchConnection => {
      res.writeHead(200, { ...JSON_HEADERS, 'Transfer-Encoding': 'chunked' });
      res.flushHeaders();
      return new WatchConnection(
        res,
        {
          resource: r,
          namespace: ns,
          labels: sel.labels,
          fields,
          bookmarks: bookmarks === true,
          table: tableVersion === undefined ? undefined : { version: tableVersion, include },
          afterRevision,
        },
        () => this.store.revision,
        this.now,
        (c) => {
          this.watches.delete(c);
          this.notify();
        },
      );
    };
    const open = (conn: WatchConnection): void => {
      if (!conn.open) return;
      this.watches.add(conn);
      conn.startTimers({
        deadlineMs,
        bookmarkIntervalMs: this.opts.bookmarkIntervalMs,
        bookmarkBeforeTimeoutMs: this.opts.bookmarkBeforeTimeoutMs,
      });
      this.notify();
    };
    const expiredFrame = (n: number): boolean => {
      if (n >= this.store.compactedRevision) return false;
      startStream(this.store.revision).sendErrorAndEnd(tooOldWatch(n, this.store.compactedRevision));
      return true;
    };
    /** True when the request was answered (504 frame or client gone) while waiting for a future revision. */
    const waitForFuture = async (n: number): Promise<boolean> => {
      if (n <= this.store.revision) return false;
      if (this.opts.futureWatch === 'wait' && sie !== true) return false;
      try {
        await this.awaitRevision(n, req);
      } catch (e) {
        if (!isApiStatusError(e)) throw e;
        if (!res.destroyed) startStream(this.store.revision).sendErrorAndEnd(e.status);
        return true;
      }
      return res.destroyed || this.closed;
    };

    const initialState = sie === true || (sie === undefined && (requested === undefined || requested === 0));
    if (initialState) {
      if (requested !== undefined && requested > 0 && (await waitForFuture(requested))) return;
      if (res.destroyed || this.closed) return;
      // Initial state and subscription in one synchronous step: no write can fall between them.
      const conn = startStream(this.store.revision);
      for (const [, o] of this.store.listCurrent(r, ns)) conn.sendInitial(o);
      if (sie === true) conn.sendBookmark({ 'k8s.io/initial-events-end': 'true' });
      open(conn);
      return;
    }
    let from = this.store.revision;
    if (requested !== undefined && requested > 0) {
      if (expiredFrame(requested)) return;
      if (await waitForFuture(requested)) return;
      if (expiredFrame(requested)) return;
      from = requested;
    }
    if (res.destroyed || this.closed) return;
    const conn = startStream(from);
    if (from <= this.store.revision) for (const e of this.store.eventsAfter(from)) conn.deliver(e);
    open(conn);
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
  return new ApiServer(server, options);
}
