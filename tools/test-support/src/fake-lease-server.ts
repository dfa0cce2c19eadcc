/**
 * An in-memory `coordination.k8s.io/v1` Lease server behind a kube-client transport, for the leader
 * election and sharding tests, and the per-replica clock they freeze. Shaped structurally as
 * kube-client's `Transport` (this package does not depend on kube-client: kube-client's own tests
 * depend on this package).
 */
import type { Clock, ManualClock, TimerOptions } from '@reconcile-loop/primitives';

type Json = Record<string, unknown>;

/** What the fake transport receives: the fields of kube-client's `TransportRequest` it reads. */
export interface LeaseRequest {
  readonly method: string;
  readonly url: URL;
  readonly body?: string | undefined;
  readonly signal: AbortSignal;
}

/** What it answers: assignable to kube-client's `TransportResponse`. */
export interface LeaseResponse {
  readonly status: number;
  header(name: string): string | undefined;
  readonly body: AsyncIterable<string>;
  close(): void;
}

/** What happens to one request on its way: when it commits, when its answer arrives, or which half is lost. */
export interface LeaseFault {
  readonly commitDelayMs?: number | undefined;
  readonly responseDelayMs?: number | undefined;
  /** `request`: never reaches the server; `response`: committed, the answer is lost. */
  readonly drop?: 'none' | 'request' | 'response' | undefined;
}

export interface LeaseTransportOptions {
  /** The fate of each request, decided when it is sent. */
  faults?: ((method: string, url: URL) => LeaseFault) | undefined;
  /** Asked when a request would commit: `true` is a killed process, whose requests no longer reach the server. */
  dead?: (() => boolean) | undefined;
  /** Called as a request commits (before the store changes). */
  onCommit?: ((method: string, url: URL) => void) | undefined;
}

async function* chunks(text: string): AsyncGenerator<string> {
  yield text;
}

function respond(status: number, body: unknown): LeaseResponse {
  return { status, header: () => undefined, body: chunks(JSON.stringify(body)), close() {} };
}

function statusBody(code: number, reason: string, message: string): Json {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message };
}

/** The apiserver's answer to an update carrying a stale resourceVersion. */
const CONFLICT =
  'Operation cannot be fulfilled on leases.coordination.k8s.io: the object has been modified; please apply your changes to the latest version and try again';

/**
 * An in-memory Lease store with the apiserver's optimistic concurrency: every write bumps a global
 * resourceVersion; an update carrying a stale one is 409 `Conflict`, a create of an existing name
 * 409 `AlreadyExists`, a get or update of a missing one 404. A LIST filters by `labelSelector=k=v`
 * and is linearizable. Commits happen on the server's clock; answers arrive on each client's clock
 * (so a frozen client gets them only when it resumes).
 */
export class FakeLeaseServer {
  readonly leases = new Map<string, Json>();
  /** Every committed write: who holds the lease after it, at what server time. */
  readonly writes: { at: number; holder: string; rv: string }[] = [];
  #rv = 100;

  constructor(readonly clock: ManualClock) {}

  /** A transport for one client whose timers run on `clientClock`. */
  transport(clientClock: Clock, options: LeaseTransportOptions = {}): (request: LeaseRequest) => Promise<LeaseResponse> {
    return (request) =>
      new Promise<LeaseResponse>((resolve, reject) => {
        const fault = options.faults?.(request.method, request.url) ?? {};
        const timers: { clock: Clock; handle: unknown }[] = [];
        const onAbort = (): void => {
          for (const t of timers) t.clock.clearTimeout(t.handle);
          reject(request.signal.reason ?? new Error('aborted'));
        };
        if (request.signal.aborted) return onAbort();
        request.signal.addEventListener('abort', onAbort, { once: true });
        const body = request.body === undefined ? undefined : (JSON.parse(request.body) as Json);
        const commit = (): void => {
          if (fault.drop === 'request' || options.dead?.()) return;
          options.onCommit?.(request.method, request.url);
          const answer = this.handle(request.method, request.url, body);
          if (fault.drop === 'response') return;
          timers.push({
            clock: clientClock,
            handle: clientClock.setTimeout(() => {
              request.signal.removeEventListener('abort', onAbort);
              resolve(answer);
            }, fault.responseDelayMs ?? 0),
          });
        };
        timers.push({ clock: this.clock, handle: this.clock.setTimeout(commit, fault.commitDelayMs ?? 0) });
      });
  }

  /** One request against the store, at once. */
  handle(method: string, url: URL, body: Json | undefined): LeaseResponse {
    const path = url.pathname;
    const match = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/.exec(path);
    if (!match) return respond(404, statusBody(404, 'NotFound', `no route ${path}`));
    const [, namespace, name] = match;
    if (method === 'GET' && name === undefined)
      return respond(200, this.#list(namespace!, url.searchParams.get('labelSelector')));
    const key = `${namespace}/${name ?? (body?.['metadata'] as Json | undefined)?.['name']}`;
    const current = this.leases.get(key);
    if (method === 'GET')
      return current
        ? respond(200, structuredClone(current))
        : respond(404, statusBody(404, 'NotFound', `leases "${name}" not found`));
    if (method === 'POST') {
      if (current) return respond(409, statusBody(409, 'AlreadyExists', `leases "${key}" already exists`));
      return respond(201, this.#store(key, namespace!, body!));
    }
    if (method === 'PUT') {
      if (!current) return respond(404, statusBody(404, 'NotFound', `leases "${name}" not found`));
      const rv = (body?.['metadata'] as Json | undefined)?.['resourceVersion'];
      if (rv !== undefined && rv !== (current['metadata'] as Json)['resourceVersion'])
        return respond(409, statusBody(409, 'Conflict', CONFLICT));
      return respond(200, this.#store(key, namespace!, body!));
    }
    return respond(405, statusBody(405, 'MethodNotAllowed', method));
  }

  /** Writes the lease as another party would (a kubectl edit, another implementation). */
  put(namespace: string, name: string, spec: Json): void {
    this.#store(`${namespace}/${name}`, namespace, { metadata: { name }, spec });
  }

  spec(namespace: string, name: string): Json | undefined {
    return this.leases.get(`${namespace}/${name}`)?.['spec'] as Json | undefined;
  }

  /** The namespace's leases carrying label `k=v` (every one without a selector), at the current resourceVersion. */
  #list(namespace: string, selector: string | null): Json {
    const [k, v] = (selector ?? '').split('=');
    const items = [...this.leases.values()].filter(
      (l) =>
        (l['metadata'] as Json)['namespace'] === namespace &&
        (k === '' || ((l['metadata'] as Json)['labels'] as Json | undefined)?.[k!] === v),
    );
    return {
      kind: 'LeaseList',
      apiVersion: 'coordination.k8s.io/v1',
      metadata: { resourceVersion: String(this.#rv) },
      items: structuredClone(items),
    };
  }

  #store(key: string, namespace: string, body: Json): Json {
    this.#rv += 1;
    const metadata = { ...(body['metadata'] as Json), namespace, resourceVersion: String(this.#rv) };
    const object = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...body, metadata };
    this.leases.set(key, object);
    this.writes.push({
      at: this.clock.now(),
      holder: String((body['spec'] as Json | undefined)?.['holderIdentity'] ?? ''),
      rv: String(this.#rv),
    });
    return structuredClone(object);
  }
}

/**
 * One replica's clock over the shared test clock: its own offset (wall-clock skew) and a freeze,
 * as SIGSTOP gives: time goes on, nothing of the replica runs; what came due runs on resume, in order.
 */
export class ReplicaClock implements Clock {
  #frozen = false;
  /** Callbacks that came due while frozen, by handle (a clear while held still cancels them). */
  readonly #held = new Map<unknown, () => void>();

  constructor(
    readonly base: ManualClock,
    readonly offsetMs = 0,
  ) {}

  now(): number {
    return this.base.now() + this.offsetMs;
  }

  setTimeout(callback: () => void, delayMs: number, options?: TimerOptions): unknown {
    const handle: unknown = this.base.setTimeout(
      () => (this.#frozen ? this.#held.set(handle, callback) : callback()),
      delayMs,
      options,
    );
    return handle;
  }

  clearTimeout(handle: unknown): void {
    this.#held.delete(handle);
    this.base.clearTimeout(handle);
  }

  get frozen(): boolean {
    return this.#frozen;
  }

  freeze(): void {
    this.#frozen = true;
  }

  thaw(): void {
    this.#frozen = false;
    for (const [handle, callback] of [...this.#held]) if (this.#held.delete(handle)) callback();
  }
}
