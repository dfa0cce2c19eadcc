import { KubeClient, type Transport, type TransportResponse } from '@reconcile-loop/kube-client';
import type { Clock, Logger, ManualClock, TimerOptions } from '@reconcile-loop/primitives';
import { LeaderElector, LeaseLock, type LeaderElectorOptions } from '../src/index.js';

type Json = Record<string, unknown>;

/** What happens to one request on its way: when it commits, when its answer arrives, or which half is lost. */
export interface Fault {
  readonly commitDelayMs?: number;
  readonly responseDelayMs?: number;
  /** `request`: never reaches the server; `response`: committed, the answer is lost. */
  readonly drop?: 'none' | 'request' | 'response';
}

async function* chunks(text: string): AsyncGenerator<string> {
  yield text;
}

function respond(status: number, body: unknown): TransportResponse {
  return { status, header: () => undefined, body: chunks(JSON.stringify(body)), close() {} };
}

function statusBody(code: number, reason: string, message: string): Json {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message };
}

/**
 * An in-memory Lease store with the apiserver's optimistic concurrency: every write bumps a global
 * resourceVersion; an update carrying a stale one is 409 `Conflict`, a create of an existing name
 * 409 `AlreadyExists`, a get or update of a missing one 404. Commits happen on the server's clock;
 * answers arrive on each client's clock (so a frozen client gets them only when it resumes).
 */
export class FakeLeaseServer {
  readonly leases = new Map<string, Json>();
  /** Every committed write: who holds the lease after it, at what server time. */
  readonly writes: { at: number; holder: string; rv: string }[] = [];
  #rv = 100;

  constructor(readonly clock: ManualClock) {}

  /** A transport for one client; `faults` decides the fate of each request, `blackHole` drops everything once true. */
  transport(
    clientClock: Clock,
    options: { faults?: (() => Fault) | undefined; blackHole?: (() => boolean) | undefined } = {},
  ): Transport {
    return (request) =>
      new Promise<TransportResponse>((resolve, reject) => {
        const fault = options.blackHole?.() ? { drop: 'request' as const } : (options.faults?.() ?? {});
        const timers: { clock: Clock; handle: unknown }[] = [];
        const onAbort = (): void => {
          for (const t of timers) t.clock.clearTimeout(t.handle);
          reject(request.signal.reason ?? new Error('aborted'));
        };
        if (request.signal.aborted) return onAbort();
        request.signal.addEventListener('abort', onAbort, { once: true });
        const body = request.body === undefined ? undefined : (JSON.parse(request.body) as Json);
        const commit = (): void => {
          if (fault.drop === 'request') return;
          const answer = this.handle(request.method, request.url.pathname, body);
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
  handle(method: string, path: string, body: Json | undefined): TransportResponse {
    const match = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/.exec(path);
    if (!match) return respond(404, statusBody(404, 'NotFound', `no route ${path}`));
    const [, namespace, name] = match;
    const key = `${namespace}/${name ?? (body?.['metadata'] as Json | undefined)?.['name']}`;
    const current = this.leases.get(key);
    if (method === 'GET')
      return current ? respond(200, current) : respond(404, statusBody(404, 'NotFound', `leases "${name}" not found`));
    if (method === 'POST') {
      if (current) return respond(409, statusBody(409, 'AlreadyExists', `leases "${key}" already exists`));
      return respond(201, this.#store(key, namespace!, body!));
    }
    if (method === 'PUT') {
      if (!current) return respond(404, statusBody(404, 'NotFound', `leases "${name}" not found`));
      const rv = (body?.['metadata'] as Json | undefined)?.['resourceVersion'];
      if (rv !== undefined && rv !== (current['metadata'] as Json)['resourceVersion']) {
        return respond(
          409,
          statusBody(
            409,
            'Conflict',
            'Operation cannot be fulfilled on leases.coordination.k8s.io: the object has been modified; please apply your changes to the latest version and try again',
          ),
        );
      }
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
 * One replica's clock over the shared test clock: its own offset (wall-clock skew, irrelevant to
 * the election) and a freeze, as SIGSTOP gives: time goes on, nothing of the replica runs; what
 * came due runs on resume, in order.
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
    for (const [handle, callback] of [...this.#held]) {
      if (!this.#held.delete(handle)) continue;
      callback();
    }
  }
}

/** A logger that keeps every line. */
export function recordingLogger(): Logger & { lines: { level: string; message: string; fields: Record<string, unknown> }[] } {
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => void lines.push({ level, message, fields });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A replica: its clock, its client on the fake server, its elector. */
export interface Replica {
  readonly id: string;
  readonly clock: ReplicaClock;
  readonly elector: LeaderElector;
  readonly controller: AbortController;
  readonly logger: ReturnType<typeof recordingLogger>;
  /** Set to make the replica vanish from the network (a kill). */
  blackHole: boolean;
  run: Promise<void> | undefined;
}

export function replica(
  server: FakeLeaseServer,
  id: string,
  options: { offsetMs?: number; faults?: () => Fault; elector?: Partial<LeaderElectorOptions> } = {},
): Replica {
  const clock = new ReplicaClock(server.clock, options.offsetMs ?? 0);
  const logger = recordingLogger();
  const self: Replica = {
    id,
    clock,
    logger,
    blackHole: false,
    controller: new AbortController(),
    run: undefined,
    elector: undefined as unknown as LeaderElector,
  };
  const client = new KubeClient({
    server: 'https://fake.invalid',
    rateLimit: false,
    clock,
    requestTimeoutMs: 30_000,
    transport: server.transport(clock, { faults: options.faults, blackHole: () => self.blackHole }),
  });
  const lock = new LeaseLock({ client, namespace: 'default', name: 'lock', identity: id });
  (self as { elector: LeaderElector }).elector = new LeaderElector({
    lock,
    clock,
    wallClock: () => 1_800_000_000_000 + clock.now(),
    random: () => 0.5,
    logger,
    ...options.elector,
  });
  return self;
}

export function start(r: Replica): Replica {
  r.run = r.elector.run(r.controller.signal);
  return r;
}
