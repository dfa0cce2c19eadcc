import { FakeTransport, statusBody, type FakeAnswer, type SeenRequest } from './fake-transport.js';

type Obj = { metadata: Record<string, unknown> & { name: string }; [key: string]: unknown };

function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * A tiny stateful apiserver for one namespaced resource behind a {@link FakeTransport}: GET, POST
 * (409 AlreadyExists), PUT and merge PATCH (409 on a stale resourceVersion; `/status` writes change
 * status only), DELETE with preconditions and finalizers. `beforeWrite` lets a test run a
 * concurrent writer between a client's read and its write.
 */
export class FakeApiServer {
  readonly fake = new FakeTransport();
  readonly objects = new Map<string, Obj>();
  #rv = 100;
  beforeWrite: ((request: SeenRequest) => void) | undefined;
  writes = 0;

  constructor(readonly plural: string) {
    this.fake.otherwise((request) => this.#handle(request));
  }

  put(object: Obj): Obj {
    const stored = structuredClone(object);
    stored.metadata.resourceVersion = String(++this.#rv);
    stored.metadata.uid ??= `uid-${object.metadata.name}-${this.#rv}`;
    this.objects.set(object.metadata.name, stored);
    return stored;
  }

  /** A write by someone else: bumps the resourceVersion. */
  touch(name: string, mutate: (object: Obj) => void): void {
    const current = structuredClone(this.objects.get(name)!);
    mutate(current);
    this.put(current);
  }

  #handle(request: SeenRequest): FakeAnswer {
    const parts = request.path.split('/');
    const at = parts.indexOf(this.plural);
    const name = parts[at + 1] ? decodeURIComponent(parts[at + 1]!) : undefined;
    const sub = parts[at + 2];
    if (request.method !== 'GET') {
      this.writes += 1;
      this.beforeWrite?.(request);
    }
    const current = name === undefined ? undefined : this.objects.get(name);
    const notFound = (): FakeAnswer => ({ status: 404, body: statusBody(404, 'NotFound', `${this.plural} "${name}" not found`) });
    const conflict = (message: string): FakeAnswer => ({ status: 409, body: statusBody(409, 'Conflict', message) });
    switch (request.method) {
      case 'GET':
        return current ? { body: current } : notFound();
      case 'POST': {
        const body = request.body as Obj;
        if (this.objects.has(body.metadata.name))
          return { status: 409, body: statusBody(409, 'AlreadyExists', `${this.plural} "${body.metadata.name}" already exists`) };
        return { status: 201, body: this.put(body) };
      }
      case 'PUT':
      case 'PATCH': {
        if (!current) return notFound();
        const body = request.body as Obj;
        const next = (request.method === 'PUT' ? structuredClone(body) : mergePatch(current, body)) as Obj;
        const rv = next.metadata?.resourceVersion;
        if (rv !== undefined && rv !== current.metadata.resourceVersion)
          return conflict(
            `Operation cannot be fulfilled on ${this.plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
          );
        const stored =
          sub === 'status'
            ? { ...current, status: next['status'] }
            : { ...next, status: current['status'], metadata: { ...next.metadata, uid: current.metadata.uid } };
        if (stored.metadata.deletionTimestamp && ((stored.metadata.finalizers as string[] | undefined) ?? []).length === 0) {
          this.objects.delete(name!);
          return { body: stored };
        }
        return { body: this.put(stored as Obj) };
      }
      case 'DELETE': {
        if (!current) return notFound();
        const pre = (request.body as { preconditions?: { uid?: string; resourceVersion?: string } }).preconditions;
        if (pre?.uid !== undefined && pre.uid !== current.metadata.uid)
          return conflict(
            `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${String(current.metadata.uid)}`,
          );
        if (pre?.resourceVersion !== undefined && pre.resourceVersion !== current.metadata.resourceVersion)
          return conflict(`Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}`);
        if (((current.metadata.finalizers as string[] | undefined) ?? []).length > 0) {
          return { body: this.put({ ...current, metadata: { ...current.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }) };
        }
        this.objects.delete(name!);
        return { body: { kind: 'Status', apiVersion: 'v1', status: 'Success', details: { name, kind: this.plural } } };
      }
    }
  }
}
