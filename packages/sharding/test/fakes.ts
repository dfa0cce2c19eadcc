import { KubeClient, type Transport, type TransportResponse } from '@reconcile-loop/kube-client';
import type { Clock, ManualClock, TimerOptions } from '@reconcile-loop/primitives';
import { ShardMember, type ShardMemberOptions } from '../src/index.js';

type Json = Record<string, unknown>;

/** What happens to one request: when it commits on the server, when its answer arrives. */
export interface Fault {
  readonly commitDelayMs?: number;
  readonly responseDelayMs?: number;
}

function respond(status: number, body: unknown): TransportResponse {
  return {
    status,
    header: () => undefined,
    body: (async function* () {
      yield JSON.stringify(body);
    })(),
    close() {},
  };
}

const statusBody = (code: number, reason: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  code,
  reason,
  message: reason,
});

/**
 * An in-memory Lease store with the apiserver's optimistic concurrency (a stale `resourceVersion`
 * is 409) and a linearizable LIST by `labelSelector=k=v`. Commits happen on the server's clock,
 * answers arrive on the client's (so a frozen client gets them when it resumes).
 */
export class FakeLeaseServer {
  readonly leases = new Map<string, Json>();
  #rv = 100;

  constructor(readonly clock: ManualClock) {}

  transport(
    clientClock: Clock,
    options: {
      faults?: ((method: string, url: URL) => Fault) | undefined;
      dead?: (() => boolean) | undefined;
      onCommit?: ((method: string, url: URL) => void) | undefined;
    } = {},
  ): Transport {
    return (request) =>
      new Promise<TransportResponse>((resolve, reject) => {
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
          if (options.dead?.()) return; // a killed process: nothing reaches the server any more
          options.onCommit?.(request.method, request.url);
          const answer = this.handle(request.method, request.url, body);
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

  handle(method: string, url: URL, body: Json | undefined): TransportResponse {
    const match = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/.exec(url.pathname);
    if (!match) return respond(404, statusBody(404, 'NotFound'));
    const [, namespace, name] = match;
    if (method === 'GET' && name === undefined) {
      const [k, v] = (url.searchParams.get('labelSelector') ?? '').split('=');
      const items = [...this.leases.values()].filter(
        (l) =>
          (l['metadata'] as Json)['namespace'] === namespace &&
          (k === '' || ((l['metadata'] as Json)['labels'] as Json | undefined)?.[k!] === v),
      );
      return respond(200, {
        kind: 'LeaseList',
        apiVersion: 'coordination.k8s.io/v1',
        metadata: { resourceVersion: String(this.#rv) },
        items: structuredClone(items),
      });
    }
    const key = `${namespace}/${name ?? (body?.['metadata'] as Json | undefined)?.['name']}`;
    const current = this.leases.get(key);
    if (method === 'GET') return current ? respond(200, structuredClone(current)) : respond(404, statusBody(404, 'NotFound'));
    if (method === 'POST') {
      if (current) return respond(409, statusBody(409, 'AlreadyExists'));
      return respond(201, this.#store(key, namespace!, body!));
    }
    if (method === 'PUT') {
      if (!current) return respond(404, statusBody(404, 'NotFound'));
      const rv = (body?.['metadata'] as Json | undefined)?.['resourceVersion'];
      if (rv !== undefined && rv !== (current['metadata'] as Json)['resourceVersion'])
        return respond(409, statusBody(409, 'Conflict'));
      return respond(200, this.#store(key, namespace!, body!));
    }
    return respond(405, statusBody(405, 'MethodNotAllowed'));
  }

  #store(key: string, namespace: string, body: Json): Json {
    this.#rv += 1;
    const metadata = { ...(body['metadata'] as Json), namespace, resourceVersion: String(this.#rv) };
    const object = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...body, metadata };
    this.leases.set(key, object);
    return structuredClone(object);
  }
}

/** One replica's clock over the shared test clock, with a freeze as SIGSTOP gives: time goes on, nothing of the replica runs. */
export class ReplicaClock implements Clock {
  #frozen = false;
  readonly #held = new Map<unknown, () => void>();

  constructor(readonly base: ManualClock) {}

  now(): number {
    return this.base.now();
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

/** A replica: its clock, its client on the fake server, its member. */
export interface Replica {
  readonly id: string;
  readonly clock: ReplicaClock;
  readonly member: ShardMember;
  readonly controller: AbortController;
  /** Set to make the replica vanish from the network (a kill). */
  dead: boolean;
  run: Promise<void> | undefined;
}

export const TIMINGS = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;

export function replica(
  server: FakeLeaseServer,
  id: string,
  options: {
    faults?: (method: string, url: URL) => Fault;
    member?: Partial<ShardMemberOptions>;
    onCommit?: (method: string, url: URL) => void;
  } = {},
): Replica {
  const clock = new ReplicaClock(server.clock);
  const self = { id, clock, dead: false, controller: new AbortController(), run: undefined } as Omit<Replica, 'member'> & {
    member: ShardMember;
  };
  const client = new KubeClient({
    server: 'https://fake.invalid',
    rateLimit: false,
    clock,
    requestTimeoutMs: 30_000,
    transport: server.transport(clock, { faults: options.faults, dead: () => self.dead, onCommit: options.onCommit }),
  });
  self.member = new ShardMember({
    client,
    namespace: 'default',
    ring: 'demo',
    identity: id,
    virtualNodes: 8,
    clock,
    wallClock: () => 1_800_000_000_000 + clock.now(),
    random: () => 0.5,
    ...TIMINGS,
    ...options.member,
  });
  return self;
}

export function start(r: Replica): Replica {
  r.run = r.member.run(r.controller.signal);
  return r;
}
