import { backoffDelay, type BackoffPolicy } from '@reconcile-loop/primitives';
import { objectSchema } from '@reconcile-loop/k8s-types';
import { ManualClock } from '@reconcile-loop/primitives';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  addFinalizer,
  apply,
  applyStatus,
  createIfAbsent,
  DEFAULT_BACKOFF,
  DEFAULT_RETRY,
  deleteIfPresent,
  isConflict,
  KubeApiError,
  KubeClient,
  patchStatus,
  removeFinalizer,
  retryOnConflict,
  updateStatus,
} from './all.js';
import { FakeApiServer } from './fake-apiserver.js';
import { statusBody } from './fake-transport.js';

const resource = { group: 'example.io', version: 'v1', plural: 'cellsets', kind: 'CellSet' };
const schema = objectSchema({
  spec: z.object({ replicas: z.number() }),
  status: z
    .object({ ready: z.number().optional(), observedGeneration: z.number().optional(), note: z.string().optional() })
    .optional(),
});

function setup() {
  const server = new FakeApiServer('cellsets');
  const clock = new ManualClock(0);
  const client = new KubeClient({ server: 'https://k8s.test', transport: server.fake.transport, clock, rateLimit: false });
  const cells = client.resource(resource, schema).inNamespace('ns');
  server.put({ metadata: { name: 'a', namespace: 'ns', generation: 3 }, spec: { replicas: 2 }, status: { ready: 0 } });
  return { server, clock, cells };
}

/** Settles `promise` while moving the clock in small steps (retries sleep on it). */
async function drive<V>(clock: ManualClock, promise: Promise<V>): Promise<V> {
  let done = false;
  const watched = promise.finally(() => (done = true));
  while (!done) await clock.advanceAsync(1);
  return watched;
}

const conflict = () =>
  new KubeApiError({ statusCode: 409, status: statusBody(409, 'Conflict', 'modified') as never, verb: 'update', path: '/x' });

describe('[kube_client: RetryOnConflict] client-go retry.RetryOnConflict with DefaultRetry on an injectable clock', () => {
  it('DefaultRetry is 5 attempts 10 ms apart with jitter 0.1; DefaultBackoff is 10/50/250 ms', () => {
    const sleeps = ({ retry, attempts }: { retry: BackoffPolicy; attempts: number }, random: () => number) =>
      Array.from({ length: attempts - 1 }, (_, i) => backoffDelay(retry, i + 1, random));
    expect(DEFAULT_RETRY.attempts).toBe(5);
    expect(sleeps(DEFAULT_RETRY, () => 0)).toEqual([10, 10, 10, 10]);
    expect(sleeps(DEFAULT_RETRY, () => 0.999).every((d) => d > 10.99 && d < 11)).toBe(true);
    expect(sleeps(DEFAULT_BACKOFF, () => 0)).toEqual([10, 50, 250]);
    expect(sleeps({ retry: { initialMs: 10, maxMs: 200, factor: 10 }, attempts: 4 }, () => 0)).toEqual([10, 100, 200]);
  });

  it('retries a conflict after the backoff, at most steps attempts, then throws the last conflict; other errors at once', async () => {
    const clock = new ManualClock(0);
    let calls = 0;
    const always = retryOnConflict(
      async () => {
        calls += 1;
        throw conflict();
      },
      { clock, random: () => 0 },
    ).catch((e: unknown) => e);
    await clock.advanceAsync(39);
    expect(calls).toBe(4);
    await clock.advanceAsync(1);
    expect(isConflict(await always)).toBe(true);
    expect(calls).toBe(5);
    let other = 0;
    const boom = await retryOnConflict(
      async () => {
        other += 1;
        throw new Error('boom');
      },
      { clock },
    ).catch((e: unknown) => e);
    expect([other, (boom as Error).message]).toEqual([1, 'boom']);
    let n = 0;
    expect(
      await drive(
        clock,
        retryOnConflict(async (attempt) => (++n < 3 ? Promise.reject(conflict()) : attempt), { clock }),
      ),
    ).toBe(3);
  });

  it('the sleep between attempts honours the AbortSignal; a bad backoff is a typed error', async () => {
    const clock = new ManualClock(0);
    const controller = new AbortController();
    const pending = retryOnConflict(async () => Promise.reject(conflict()), { clock, signal: controller.signal }).catch(
      (e: unknown) => e,
    );
    await clock.advanceAsync(0);
    controller.abort(new Error('stop'));
    expect(await pending).toMatchObject({ message: 'stop' });
    expect(clock.pending).toBe(0);
    await expect(retryOnConflict(async () => 1, { attempts: 0 })).rejects.toMatchObject({ code: 'RL_INVALID_OPTIONS' });
  });
});

describe('[kube_client: UpdateStatus with RetryOnConflict] status writes re-read and re-apply the mutation on 409', () => {
  it('updateStatus: a concurrent writer between our read and write makes a 409; the retry re-reads, so both writes land', async () => {
    const { server, clock, cells } = setup();
    let raced = false;
    server.beforeWrite = () => {
      if (raced) return;
      raced = true;
      server.touch('a', (o) => (o['status'] = { ...(o['status'] as object), note: 'other writer' }));
    };
    const result = await drive(
      clock,
      updateStatus(cells, 'a', (o) => {
        o['status'] = { ...(o['status'] as object), ready: 2, observedGeneration: o.metadata.generation };
      }),
    );
    expect(result).toMatchObject({ written: true, attempts: 2 });
    expect(server.objects.get('a')!['status']).toEqual({ ready: 2, observedGeneration: 3, note: 'other writer' });
    expect(result.object.status).toEqual({ ready: 2, observedGeneration: 3, note: 'other writer' });
  });

  it('updateStatus writes nothing when the mutation leaves status unchanged or returns false', async () => {
    const { server, cells } = setup();
    expect(await updateStatus(cells, 'a', (o) => void (o['status'] = { ready: 0 }))).toMatchObject({
      written: false,
      attempts: 1,
    });
    expect(await updateStatus(cells, 'a', () => false)).toMatchObject({ written: false });
    expect(server.writes).toBe(0);
  });

  it('patchStatus: an optimistic-lock merge patch (resourceVersion in the body) recomputed from the view after a 409', async () => {
    const { server, clock, cells } = setup();
    let raced = false;
    server.beforeWrite = () => {
      if (raced) return;
      raced = true;
      server.touch('a', (o) => (o['spec'] = { replicas: 5 }));
      racedRv = server.objects.get('a')!.metadata.resourceVersion as string;
    };
    let racedRv = '';
    const seen: number[] = [];
    const result = await drive(
      clock,
      patchStatus(cells, 'a', (current) => {
        seen.push(current.spec.replicas);
        return { ready: current.spec.replicas };
      }),
    );
    expect(seen).toEqual([2, 5]);
    expect(result).toMatchObject({ written: true, attempts: 2, object: { status: { ready: 5 } } });
    const last = server.fake.requests.at(-1)!;
    expect(last).toMatchObject({ method: 'PATCH', contentType: 'application/merge-patch+json', body: { status: { ready: 5 } } });
    expect(last.path.endsWith('/cellsets/a/status')).toBe(true);
    // the retry's lock is the resourceVersion the concurrent writer left
    expect((last.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion).toBe(racedRv);
    expect(await patchStatus(cells, 'a', () => undefined)).toMatchObject({ written: false });
  });

  it('conflicts that never clear end after DefaultRetry steps with the 409', async () => {
    const { server, clock, cells } = setup();
    server.beforeWrite = () => server.touch('a', (o) => (o['spec'] = { replicas: Math.random() }));
    const error = await drive(
      clock,
      patchStatus(cells, 'a', () => ({ ready: 1 })).catch((e: unknown) => e),
    );
    expect(isConflict(error)).toBe(true);
    expect(server.writes).toBe(5);
  });
});

describe('[kube_client: controllerutil.AddFinalizer] finalizers added and removed idempotently and conflict-safe', () => {
  it('addFinalizer writes once; a second call writes nothing; a concurrent finalizer change is kept through the 409 retry', async () => {
    const { server, clock, cells } = setup();
    let raced = false;
    server.beforeWrite = () => {
      if (raced) return;
      raced = true;
      server.touch('a', (o) => (o.metadata['finalizers'] = ['other.io/keep']));
    };
    expect(await drive(clock, addFinalizer(cells, 'a', 'example.io/cleanup'))).toMatchObject({ changed: true, attempts: 2 });
    expect(server.objects.get('a')!.metadata['finalizers']).toEqual(['other.io/keep', 'example.io/cleanup']);
    const writes = server.writes;
    expect(await addFinalizer(cells, 'a', 'example.io/cleanup')).toMatchObject({ changed: false });
    expect(server.writes).toBe(writes);
    const patch = server.fake.requests.filter((r) => r.method === 'PATCH').at(-1)!;
    expect(patch.contentType).toBe('application/merge-patch+json');
    expect(patch.body).toMatchObject({
      metadata: { resourceVersion: expect.any(String), finalizers: ['other.io/keep', 'example.io/cleanup'] },
    });
  });

  it('removeFinalizer: idempotent, and a delete held by the last finalizer completes when it is removed; a gone object is success', async () => {
    const { server, cells } = setup();
    await addFinalizer(cells, 'a', 'example.io/cleanup');
    const deleting = await deleteIfPresent(cells, 'a');
    expect(deleting.outcome === 'deleted' && deleting.object?.metadata.deletionTimestamp).toBeGreaterThan(0);
    expect(await removeFinalizer(cells, 'a', 'example.io/other')).toMatchObject({ changed: false });
    expect(await removeFinalizer(cells, 'a', 'example.io/cleanup')).toMatchObject({ changed: true });
    expect(server.objects.has('a')).toBe(false);
    expect(await removeFinalizer(cells, 'a', 'example.io/cleanup')).toEqual({ object: undefined, changed: false, attempts: 1 });
    await expect(addFinalizer(cells, 'a', 'x')).rejects.toMatchObject({ reason: 'NotFound' });
  });

  it('removeFinalizer: another writer finishing the deletion between our read and our write (the PATCH answers 404) is success, not an error', async () => {
    const { server, cells } = setup();
    await addFinalizer(cells, 'a', 'example.io/cleanup');
    await deleteIfPresent(cells, 'a');
    server.beforeWrite = () => server.objects.delete('a'); // someone removed the finalizer and the object went
    expect(await removeFinalizer(cells, 'a', 'example.io/cleanup')).toEqual({ object: undefined, changed: false, attempts: 1 });
    server.beforeWrite = undefined;
    server.put({ metadata: { name: 'b' }, spec: { replicas: 1 } });
    server.beforeWrite = () => server.objects.delete('b');
    // adding to an object that vanished mid-way stays NotFound
    await expect(addFinalizer(cells, 'b', 'example.io/cleanup')).rejects.toMatchObject({ reason: 'NotFound' });
  });
});

describe('[kube_client: create-if-absent] AlreadyExists is success and returns the existing object (seed 003 GC anchor)', () => {
  it('creates when absent; returns the existing object with created:false when present', async () => {
    const { server, cells } = setup();
    const first = await createIfAbsent(cells, { metadata: { name: 'anchor' }, spec: { replicas: 0 } });
    expect(first.created).toBe(true);
    const second = await createIfAbsent(cells, { metadata: { name: 'anchor' }, spec: { replicas: 9 } });
    expect(second).toMatchObject({
      created: false,
      object: { metadata: { uid: first.object.metadata.uid }, spec: { replicas: 0 } },
    });
    expect(server.objects.size).toBe(2);
  });

  it('an object deleted between the 409 and the GET is created again; other errors and a nameless body are thrown', async () => {
    const { server, cells } = setup();
    server.put({ metadata: { name: 'flaky', namespace: 'ns' }, spec: { replicas: 0 } });
    let vanished = false;
    server.beforeWrite = () => {
      if (!vanished && server.objects.has('flaky')) {
        vanished = true;
        queueMicrotask(() => server.objects.delete('flaky'));
      }
    };
    expect(await createIfAbsent(cells, { metadata: { name: 'flaky' }, spec: { replicas: 1 } })).toMatchObject({
      created: true,
      object: { spec: { replicas: 1 } },
    });
    await expect(createIfAbsent(cells, { metadata: { generateName: 'x-' } })).rejects.toMatchObject({
      code: 'RL_INVALID_OPTIONS',
    });
    server.fake.next({ status: 403, body: statusBody(403, 'Forbidden', 'no') });
    await expect(createIfAbsent(cells, { metadata: { name: 'z' } })).rejects.toMatchObject({ reason: 'Forbidden' });
  });
});

describe('[kube_client: delete-if-present] NotFound tolerated; UID/resourceVersion preconditions; a precondition mismatch is its own outcome', () => {
  it('deleted, absent, and precondition-failed for another UID (a newer attempt with the same name is left alone)', async () => {
    const { server, cells } = setup();
    const uid = server.objects.get('a')!.metadata.uid as string;
    server.touch('a', () => {}); // a newer resourceVersion
    const stale = await deleteIfPresent(cells, 'a', { preconditions: { uid: 'uid-of-attempt-1' } });
    expect(stale.outcome).toBe('precondition-failed');
    expect(stale.outcome === 'precondition-failed' && stale.error.status?.message).toMatch(/Precondition failed: UID/);
    expect(server.objects.has('a')).toBe(true);
    const rv = await deleteIfPresent(cells, 'a', { preconditions: { uid, resourceVersion: '1' } });
    expect(rv.outcome).toBe('precondition-failed');
    const done = await deleteIfPresent(cells, 'a', { preconditions: { uid }, propagationPolicy: 'Background' });
    expect(done).toMatchObject({ outcome: 'deleted', status: { status: 'Success' } });
    expect(await deleteIfPresent(cells, 'a', { preconditions: { uid } })).toEqual({ outcome: 'absent' });
  });

  it('a 409 without preconditions and any other failure are thrown', async () => {
    const { server, cells } = setup();
    server.fake.next(
      { status: 409, body: statusBody(409, 'Conflict', 'x') },
      { status: 500, body: statusBody(500, 'InternalError', 'x') },
    );
    await expect(deleteIfPresent(cells, 'a')).rejects.toMatchObject({ reason: 'Conflict' });
    await expect(deleteIfPresent(cells, 'a', { preconditions: { uid: 'u' } })).rejects.toMatchObject({ reason: 'InternalError' });
  });
});

describe('[kube_client: server-side apply] apply and applyStatus helpers with a field manager', () => {
  it('apply drops managedFields, and resourceVersion/uid unless lock; applyStatus sends only the status to /status', async () => {
    const { server, cells } = setup();
    server.fake.next(
      () => ({ body: server.objects.get('a') }),
      () => ({ body: server.objects.get('a') }),
      () => ({ body: server.objects.get('a') }),
    );
    const readBack = {
      apiVersion: 'example.io/v1',
      kind: 'CellSet',
      metadata: { name: 'a', resourceVersion: '7', uid: 'u', managedFields: [{ manager: 'x' }] },
      spec: { replicas: 4 },
    };
    await apply(cells, readBack, { fieldManager: 'ctl', force: false });
    await apply(cells, readBack, { fieldManager: 'ctl', force: true, lock: true });
    await applyStatus(cells, 'a', { ready: 4 }, { fieldManager: 'ctl', force: true });
    const [plain, locked, status] = server.fake.requests;
    expect(plain!.body).toEqual({ apiVersion: 'example.io/v1', kind: 'CellSet', metadata: { name: 'a' }, spec: { replicas: 4 } });
    expect(locked!.body).toMatchObject({ metadata: { name: 'a', resourceVersion: '7', uid: 'u' } });
    expect((locked!.body as { metadata: Record<string, unknown> }).metadata['managedFields']).toBeUndefined();
    expect(status).toMatchObject({
      method: 'PATCH',
      contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'example.io/v1', kind: 'CellSet', metadata: { name: 'a' }, status: { ready: 4 } },
    });
    expect(status!.path.endsWith('/cellsets/a/status')).toBe(true);
    expect(Object.fromEntries(status!.query)).toEqual({ fieldManager: 'ctl', force: 'true' });
    await expect(applyStatus(cells, '', {}, { fieldManager: 'ctl', force: true })).rejects.toMatchObject({
      code: 'RL_INVALID_OPTIONS',
    });
  });
});
