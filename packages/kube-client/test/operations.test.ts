import { hostname } from 'node:os';
import { ManualClock } from '@reconcile-loop/primitives';
import { recordingLogger, settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CLOSE_TIMEOUT_MS, defaultReportingInstance, EventRecorder, KubeClient, type KubeClientOptions } from './all.js';
import { FakeTransport } from './fake-transport.js';

function server(options: Partial<KubeClientOptions> = {}) {
  const fake = new FakeTransport().otherwise((r) => ({
    status: r.method === 'POST' ? 201 : 200,
    body: { metadata: { name: 'e', resourceVersion: '1' }, ...(r.body as object) },
  }));
  const clock = new ManualClock(0);
  const client = new KubeClient({ server: 'https://k8s.test', transport: fake.transport, clock, ...options });
  return { fake, clock, client };
}

const objectRef = (i: number) => ({ apiVersion: 'v1', kind: 'Pod', name: `web-${i}`, namespace: 'prod', uid: `u-${i}` });

describe('[kube_client: Shutdown budget] close() writes what it can within its deadline and drops the rest with one log line', () => {
  it('5,000 pending Events behind the default 5 writes/s limiter: close returns at its deadline on the clock, the rest counted and named in ONE warning', async () => {
    const { fake, clock, client } = server(); // client-go's 5 QPS / burst 10 on the writes
    const logger = recordingLogger();
    const recorder = new EventRecorder({
      client,
      reportingController: 'example.io/c',
      reportingInstance: 'c-0',
      logger,
      maxQueued: 10_000,
    });
    for (let i = 0; i < 5_000; i++) recorder.event(objectRef(i), { type: 'Normal', reason: 'Created', action: 'Create' });
    await settle();
    expect(fake.requests).toHaveLength(10); // the burst; 4,990 wait their turn
    let closed = false;
    const closing = recorder.close({ timeoutMs: 2_000 }).then(() => (closed = true));
    await clock.advanceAsync(1_999);
    expect(closed).toBe(false);
    await clock.advanceAsync(1);
    await closing;
    expect(closed).toBe(true);
    expect(clock.now()).toBe(2_000); // never past the deadline on the clock
    const { created, droppedAtDeadline } = recorder.stats;
    expect(created).toBeGreaterThanOrEqual(19); // 10 at once, then one per 200 ms
    expect(created).toBeLessThanOrEqual(21);
    expect(created + droppedAtDeadline).toBe(5_000);
    const warnings = logger.entries.filter((e) => e.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.fields).toMatchObject({ dropped: droppedAtDeadline, timeoutMs: 2_000 });
    expect(warnings[0]!.message).toContain(`${droppedAtDeadline} pending events dropped`);
    expect(clock.pending).toBe(0); // no timer left behind: the process can exit
    await recorder.close(); // shared, already settled
    expect(fake.requests.length).toBe(created);
  });

  it('nothing pending: close resolves at once without a timer; the default budget is 5 s; a bad timeout is an OptionsError', async () => {
    const { clock, client } = server({ rateLimit: false });
    const recorder = new EventRecorder({ client, reportingController: 'example.io/c', reportingInstance: 'c-0' });
    recorder.event(objectRef(1), { type: 'Normal', reason: 'Created', action: 'Create' });
    await recorder.flush();
    await recorder.close();
    expect(clock.pending).toBe(0);
    expect(recorder.stats).toMatchObject({ created: 1, droppedAtDeadline: 0 });
    expect(DEFAULT_CLOSE_TIMEOUT_MS).toBe(5_000);
    expect(() => new EventRecorder({ client, reportingController: 'x', closeTimeoutMs: -1 })).toThrow(/closeTimeoutMs/);
  });
});

/** An Events endpoint keeping each Event's latest count (a series' `count`, or 1 without a series). */
function eventsServer() {
  const counts = new Map<string, number>();
  const instances = new Set<string>();
  const fake = new FakeTransport().otherwise((r) => {
    const body = r.body as { metadata?: { name?: string }; series?: { count: number }; reportingInstance?: string };
    const name = r.method === 'POST' ? body.metadata!.name! : r.path.split('/').at(-1)!;
    counts.set(name, body.series?.count ?? 1);
    if (body.reportingInstance !== undefined) instances.add(body.reportingInstance);
    return { status: r.method === 'POST' ? 201 : 200, body: { metadata: { name, resourceVersion: '1' } } };
  });
  const clock = new ManualClock(0);
  const client = new KubeClient({ server: 'https://k8s.test', transport: fake.transport, clock, rateLimit: false });
  const total = () => [...counts.values()].reduce((a, b) => a + b, 0);
  return { clock, client, counts, instances, total };
}

const cellSet = { apiVersion: 'cells.reconcile-loop.dev/v1', kind: 'CellSet', name: 'web', namespace: 'prod', uid: 'u-web' };

describe('[kube_client: Event identity] the reporting instance names the replica; Event counts match the actions', () => {
  it('default reportingInstance: POD_NAME (else the hostname) plus the pid, so two replicas on one host differ', async () => {
    expect(defaultReportingInstance({ POD_NAME: 'cellset-7d9f-abcde' }, 1)).toBe('cellset-7d9f-abcde_1');
    const a = defaultReportingInstance({}, 4100);
    const b = defaultReportingInstance({}, 4101);
    expect(a).not.toBe(b);
    expect(a).toBe(`${hostname()}_4100`);
    expect(defaultReportingInstance({ POD_NAME: 'x'.repeat(200) }, 1)).toHaveLength(128);
    const { client, instances } = eventsServer();
    const recorder = new EventRecorder({ client, reportingController: 'example.io/c' });
    recorder.event(cellSet, { type: 'Normal', reason: 'R', action: 'A' });
    await recorder.close();
    expect([...instances]).toEqual([defaultReportingInstance()]);
  });

  it('N identical actions give one Event whose final series.count is N (first create, count 2 at once, the rest on close)', async () => {
    for (const n of [1, 2, 3, 37, 500]) {
      const { client, counts, total } = eventsServer();
      const recorder = new EventRecorder({ client, reportingController: 'example.io/c', reportingInstance: 'c-0' });
      for (let i = 0; i < n; i++) recorder.event(cellSet, { type: 'Normal', reason: 'FinalizerAdded', action: 'AddFinalizer' });
      await recorder.close();
      expect(counts.size).toBe(1);
      expect(total()).toBe(n);
    }
  });

  it('N distinct similar actions (a pod create each, same CellSet, type and reason): 9 Events of their own plus one combined Event counting the rest, N in all', async () => {
    for (const n of [5, 9, 10, 11, 597]) {
      const { client, counts, total } = eventsServer();
      const recorder = new EventRecorder({ client, reportingController: 'example.io/c', reportingInstance: 'c-0' });
      for (let i = 0; i < n; i++)
        recorder.event(cellSet, {
          type: 'Normal',
          reason: 'SuccessfulCreate',
          action: 'CreatePod',
          note: `created pod web-${i}`,
        });
      await recorder.close();
      expect(counts.size).toBe(Math.min(n, 10));
      expect(total()).toBe(n);
      expect(recorder.stats).toMatchObject({ droppedSpam: 0, droppedQueueFull: 0, droppedAtDeadline: 0 });
    }
  });

  it('interleaved repeats and distinct actions across objects, with series ending and restarting: every action is in a written count or in droppedSpam', async () => {
    for (const spamBurst of [25, 10_000]) {
      const { client, clock, total } = eventsServer();
      const recorder = new EventRecorder({ client, reportingController: 'example.io/c', reportingInstance: 'c-0', spamBurst });
      let actions = 0;
      for (let step = 0; step < 400; step++) {
        const set = { ...cellSet, name: `web-${step % 7}`, uid: `u-${step % 7}` };
        const note = step % 3 === 0 ? 'scaled' : `created pod ${step % 13}`;
        recorder.event(set, { type: 'Normal', reason: step % 3 === 0 ? 'Scaled' : 'SuccessfulCreate', action: 'Act', note });
        actions += 1;
        if (step % 50 === 0) await clock.advanceAsync(7 * 60_000); // series end (6 min quiet) and start again
        await recorder.flush();
      }
      await recorder.close();
      const { droppedSpam, droppedQueueFull } = recorder.stats;
      expect(droppedQueueFull).toBe(0);
      // client-go's spam filter (25 new Events per object, then one per 5 min) is the one deliberate undercount.
      if (spamBurst === 25) expect(droppedSpam).toBeGreaterThan(0);
      else expect(droppedSpam).toBe(0);
      expect(total() + droppedSpam).toBe(actions);
    }
  });
});
