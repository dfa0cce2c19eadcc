import { ManualClock } from '@reconcile-loop/primitives';
import { recordingLogger, settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CLOSE_TIMEOUT_MS, EventRecorder, KubeClient, type KubeClientOptions } from './all.js';
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
    const recorder = new EventRecorder({ client, reportingController: 'example.io/c', reportingInstance: 'c-0', logger, maxQueued: 10_000 });
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
