import { ManualClock } from '@reconcile-loop/primitives';
import { recordingLogger, settle } from '@reconcile-loop/test-support';
import { describe, expect, it } from 'vitest';
import { EventRecorder, KubeClient, microTime, type EventRecorderOptions } from './all.js';
import { SimilarEventAggregator } from '../src/events/aggregator.js';
import { FakeTransport, statusBody } from './fake-transport.js';

const WALL = Date.UTC(2026, 10, 30, 8, 0, 0);
const cellset = { apiVersion: 'example.io/v1', kind: 'CellSet', name: 'web', namespace: 'prod', uid: 'u-1' };
const pod = { apiVersion: 'v1', kind: 'Pod', name: 'web-0', namespace: 'prod', uid: 'u-2' };

function setup(options: Partial<EventRecorderOptions> = {}) {
  const fake = new FakeTransport().otherwise((r) => ({
    status: r.method === 'POST' ? 201 : 200,
    body: { metadata: { name: 'e' }, ...(r.body as object) },
  }));
  const clock = new ManualClock(0);
  const client = new KubeClient({ server: 'https://k8s.test', transport: fake.transport, clock, rateLimit: false });
  const recorder = new EventRecorder({
    client,
    reportingController: 'example.io/cellset-controller',
    reportingInstance: 'ctl-0',
    wallClock: () => WALL + clock.now(),
    random: () => 0,
    ...options,
  });
  return { fake, clock, recorder };
}

const writes = (fake: FakeTransport) =>
  fake.requests.map(
    (r) =>
      `${r.method} ${r.path.split('/').slice(-1)[0] === 'events' ? 'events' : 'event'}${r.method === 'PATCH' ? ` count=${(r.body as { series: { count: number } }).series.count}` : ''}`,
  );

describe('[kube_client: EventRecorder] events.k8s.io/v1 Events, written in the background', () => {
  it('the first occurrence creates an Event with client-go fields: name {regarding}.{hex time}, namespace, MicroTime, reporting controller/instance, regarding/related', async () => {
    const { fake, recorder } = setup();
    recorder.event(cellset, {
      type: 'Warning',
      reason: 'DeadLettered',
      action: 'RebuildPod',
      note: 'web-0 exhausted its rebuild budget',
      related: pod,
    });
    await recorder.flush();
    expect(fake.requests).toHaveLength(1);
    const request = fake.requests[0]!;
    expect(request).toMatchObject({ method: 'POST', path: '/apis/events.k8s.io/v1/namespaces/prod/events' });
    expect(request.body).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { namespace: 'prod', name: expect.stringMatching(/^web\.[0-9a-f]+$/) },
      eventTime: '2026-11-30T08:00:00.000000Z',
      reportingController: 'example.io/cellset-controller',
      reportingInstance: 'ctl-0',
      type: 'Warning',
      reason: 'DeadLettered',
      action: 'RebuildPod',
      note: 'web-0 exhausted its rebuild budget',
      regarding: cellset,
      related: pod,
    });
    expect((request.body as Record<string, unknown>)['series']).toBeUndefined();
    expect(recorder.stats).toMatchObject({ recorded: 1, created: 1 });
  });

  it('a cluster-scoped regarding object records into default; a note over 1 KiB is cut; bad input is a typed error', async () => {
    const { fake, recorder } = setup();
    recorder.event(
      { apiVersion: 'v1', kind: 'Node', name: 'n1' },
      { type: 'Normal', reason: 'Seen', action: 'Observe', note: 'é'.repeat(2000) },
    );
    await recorder.flush();
    expect(fake.requests[0]!.path).toBe('/apis/events.k8s.io/v1/namespaces/default/events');
    const note = (fake.requests[0]!.body as { note: string }).note;
    expect(Buffer.byteLength(note)).toBeLessThanOrEqual(1024);
    expect(note.endsWith('...')).toBe(true);
    expect(() => recorder.event(cellset, { type: 'Info' as never, reason: 'x', action: 'y' })).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }),
    );
    expect(() => recorder.event(cellset, { type: 'Normal', reason: '', action: 'y' })).toThrow(/reason/);
    expect(() => recorder.event({ name: '' }, { type: 'Normal', reason: 'x', action: 'y' })).toThrow(/name/);
    expect(microTime(Date.UTC(2026, 0, 1, 0, 0, 0, 5))).toBe('2026-01-01T00:00:00.005000Z');
  });
});

describe('[kube_client: EventBroadcaster aggregation] repeats fold into one Event series (tools/events)', () => {
  it('a hot loop of 1000 identical events: one create, one series write (count 2) at once, the final count after 6 min quiet', async () => {
    const { fake, clock, recorder } = setup();
    for (let i = 0; i < 1000; i++) {
      recorder.event(cellset, { type: 'Normal', reason: 'Scaled', action: 'CreatePod', note: 'replicas 3' });
      await clock.advanceAsync(10);
    }
    await recorder.flush();
    expect(writes(fake)).toEqual(['POST events', 'PATCH event count=2']);
    expect(recorder.stats).toMatchObject({ recorded: 1000, created: 1, patched: 1, aggregated: 999 });
    await clock.advanceAsync(6 * 60_000);
    await clock.advanceAsync(6 * 60_000);
    await recorder.flush();
    expect(writes(fake)).toEqual(['POST events', 'PATCH event count=2', 'PATCH event count=1000']);
    const last = fake.requests.at(-1)!;
    expect(last.contentType).toBe('application/merge-patch+json');
    expect(last.path).toBe(
      `/apis/events.k8s.io/v1/namespaces/prod/events/${(fake.requests[0]!.body as { metadata: { name: string } }).metadata.name}`,
    );
    expect(last.body).toEqual({ series: { count: 1000, lastObservedTime: microTime(WALL + 9990) } });
    // the series ended: nothing cached, no timer left
    expect(clock.pending).toBe(0);
    recorder.event(cellset, { type: 'Normal', reason: 'Scaled', action: 'CreatePod', note: 'replicas 3' });
    await recorder.flush();
    expect(writes(fake).at(-1)).toBe('POST events');
  });

  it('a series that never goes quiet is refreshed every 30 min; different notes, reasons or related objects are different Events', async () => {
    const { fake, clock, recorder } = setup();
    for (let minute = 0; minute <= 40; minute++) {
      recorder.event(cellset, { type: 'Normal', reason: 'Waiting', action: 'Reconcile', note: 'pods pending' });
      await clock.advanceAsync(60_000);
    }
    await recorder.flush();
    const patches = writes(fake).filter((w) => w.startsWith('PATCH'));
    expect(patches[0]).toBe('PATCH event count=2');
    expect(patches.length).toBeGreaterThanOrEqual(2);
    expect(Number(patches[1]!.split('=')[1])).toBeGreaterThanOrEqual(30);
    const before = fake.requests.filter((r) => r.method === 'POST').length;
    recorder.event(cellset, { type: 'Normal', reason: 'Waiting', action: 'Reconcile', note: 'pods ready' });
    recorder.event(cellset, { type: 'Normal', reason: 'Other', action: 'Reconcile', note: 'pods pending' });
    recorder.event(cellset, { type: 'Normal', reason: 'Waiting', action: 'Reconcile', note: 'pods pending', related: pod });
    await recorder.flush();
    expect(fake.requests.filter((r) => r.method === 'POST').length).toBe(before + 3);
  });

  it('close() writes the final count of live series, drops the timers, and counts later events as droppedClosed', async () => {
    const { fake, clock, recorder } = setup();
    for (let i = 0; i < 5; i++) {
      recorder.event(cellset, { type: 'Normal', reason: 'R', action: 'A' });
      await recorder.flush();
    }
    await recorder.close();
    expect(writes(fake)).toEqual(['POST events', 'PATCH event count=2', 'PATCH event count=5']);
    expect(clock.pending).toBe(0);
    recorder.event(cellset, { type: 'Normal', reason: 'R', action: 'A' });
    expect(recorder.stats.droppedClosed).toBe(1);
  });
});

describe('[kube_client: EventSourceObjectSpamFilter] a per-object token bucket (burst 25, one per 5 min) bounds new Events', () => {
  it('100 distinct events about one object: 25 written, 75 dropped and counted; another object is unaffected; one more after 5 min', async () => {
    const { fake, clock, recorder } = setup();
    // distinct reasons: not similar, so none is combined and each would be a new Event
    for (let i = 0; i < 100; i++)
      recorder.event(cellset, { type: 'Warning', reason: `Failed${i}`, action: 'CreatePod', note: `attempt ${i}` });
    recorder.event(pod, { type: 'Normal', reason: 'Seen', action: 'Observe' });
    await recorder.flush();
    expect(fake.requests).toHaveLength(26);
    expect(recorder.stats).toMatchObject({ created: 26, droppedSpam: 75 });
    await clock.advanceAsync(300_000);
    recorder.event(cellset, { type: 'Warning', reason: 'Failed101', action: 'CreatePod', note: 'attempt 101' });
    recorder.event(cellset, { type: 'Warning', reason: 'Failed102', action: 'CreatePod', note: 'attempt 102' });
    await recorder.flush();
    expect(recorder.stats).toMatchObject({ created: 27, droppedSpam: 76 });
  });

  it('the live series are bounded (4096, oldest first): an evicted series has its pending count written, never lost', async () => {
    const { fake, recorder } = setup({ maxQueued: 5000 });
    for (let i = 0; i < 2; i++) {
      recorder.event(cellset, { type: 'Normal', reason: 'R', action: 'A' });
      await recorder.flush();
    }
    recorder.event(cellset, { type: 'Normal', reason: 'R', action: 'A' });
    await recorder.flush();
    expect(writes(fake)).toEqual(['POST events', 'PATCH event count=2']); // count 3 is pending (dirty)
    for (let i = 0; i < 4096; i++)
      recorder.event({ ...pod, name: `p-${i}`, uid: `u-p-${i}` }, { type: 'Normal', reason: 'R', action: 'A' });
    await recorder.flush();
    expect(writes(fake).filter((w) => w.startsWith('PATCH'))).toEqual(['PATCH event count=2', 'PATCH event count=3']);
    // the cellset's series was forgotten: its next occurrence is a new Event
    recorder.event(cellset, { type: 'Normal', reason: 'R', action: 'A' });
    await recorder.flush();
    expect(recorder.stats).toMatchObject({ created: 1 + 4096 + 1, droppedQueueFull: 0 });
  });

  it('the write queue is bounded (maxQueued): a burst over it is dropped and counted, never buffered without limit', async () => {
    const { fake, recorder } = setup({ maxQueued: 3, spamBurst: 100 });
    for (let i = 0; i < 10; i++) recorder.event(cellset, { type: 'Normal', reason: 'R', action: 'A', note: String(i) });
    await recorder.flush();
    // the first write leaves the queue at once, so 1 in flight + 3 queued
    expect(fake.requests).toHaveLength(4);
    expect(recorder.stats.droppedQueueFull).toBe(6);
  });
});

describe('[kube_client: EventAggregator] similar events (same source, object, type and reason) are combined from the 10th distinct one in 10 min', () => {
  const failed = (note: string) => ({ type: 'Warning' as const, reason: 'Failed', action: 'CreatePod', note });
  const notes = (fake: FakeTransport) =>
    fake.requests.filter((r) => r.method === 'POST').map((r) => (r.body as { note: string }).note);

  it('9 distinct notes are their own Events; from the 10th on one combined Event carries the rest as its series; an exact repeat of a remembered one is not combined', async () => {
    const { fake, clock, recorder } = setup();
    for (let i = 0; i < 9; i++) recorder.event(cellset, failed(`attempt ${i}`));
    recorder.event(cellset, failed('attempt 3')); // an exact repeat: its own series, not a new distinct event
    for (let i = 9; i < 30; i++) recorder.event(cellset, failed(`attempt ${i}`));
    await recorder.flush();
    expect(notes(fake)).toEqual([
      ...Array.from({ length: 9 }, (_, i) => `attempt ${i}`),
      '(combined from similar events): attempt 9',
    ]);
    expect(recorder.stats).toMatchObject({ recorded: 31, created: 10, combined: 21, aggregated: 21, droppedSpam: 0 });
    // the combined Event's series: written once, at once, carrying every repeat counted before the write left the queue
    await clock.advanceAsync(12 * 60_000);
    await recorder.flush();
    const combinedName = (
      fake.requests.find((r) => (r.body as { note?: string }).note?.startsWith('(combined'))!.body as {
        metadata: { name: string };
      }
    ).metadata.name;
    const counts = fake.requests
      .filter((r) => r.method === 'PATCH' && r.path.endsWith(combinedName))
      .map((r) => (r.body as { series: { count: number } }).series.count);
    expect(counts).toEqual([21]);
    // the window restarted after 10 min without a similar event: a new note is its own Event again
    recorder.event(cellset, failed('attempt 100'));
    // another object, or another reason, is another group
    for (let i = 0; i < 12; i++) recorder.event(pod, failed(`other ${i}`));
    recorder.event(cellset, { ...failed('attempt 101'), reason: 'Other' });
    await recorder.flush();
    expect(notes(fake).slice(10)).toEqual([
      'attempt 100',
      ...Array.from({ length: 9 }, (_, i) => `other ${i}`),
      '(combined from similar events): other 9',
      'attempt 101',
    ]);
  });

  it('aggregateMaxEvents / aggregateIntervalMs are options, validated; the groups remembered are bounded (4096, least recently used forgotten)', async () => {
    const { fake, recorder } = setup({ aggregateMaxEvents: 2 });
    recorder.event(cellset, failed('a'));
    recorder.event(cellset, failed('b'));
    await recorder.flush();
    expect(notes(fake)).toEqual(['a', '(combined from similar events): b']);
    expect(() => setup({ aggregateMaxEvents: 0 })).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTIONS' }));
    expect(() => setup({ aggregateIntervalMs: -1 })).toThrow(/aggregateIntervalMs/);
    const groups = new SimilarEventAggregator(10, 600_000);
    for (let i = 0; i < 5000; i++) groups.observe(`group ${i}`, 'e', i);
    expect(groups.size).toBe(4096);
    // the oldest was forgotten: its count starts afresh (9 distinct again before combining)
    for (let i = 0; i < 9; i++) expect(groups.observe('group 0', `e${i}`, 6000)).toBe(false);
    expect(groups.observe('group 0', 'e9', 6000)).toBe(true);
  });
});

describe('[kube_client: EventRecorder retries] transient failures retried (12 tries, 10 s apart), a refusal dropped, a vanished Event recreated with its series', () => {
  it('a transport failure is retried after 10 s; after 12 tries the event is dropped and counted', async () => {
    const { fake, clock, recorder } = setup();
    let fail = 2;
    fake.otherwise((r) => {
      if (fail-- > 0) throw new Error('ECONNRESET');
      return { status: 201, body: r.body };
    });
    recorder.event(cellset, { type: 'Normal', reason: 'R', action: 'A' });
    await settle();
    expect(fake.requests).toHaveLength(1);
    await clock.advanceAsync(10_000);
    expect(fake.requests).toHaveLength(2);
    await clock.advanceAsync(10_000);
    await recorder.flush();
    expect(recorder.stats.created).toBe(1);
    fake.otherwise(() => {
      throw new Error('ECONNREFUSED');
    });
    recorder.event(pod, { type: 'Normal', reason: 'R', action: 'A' });
    for (let i = 0; i < 12; i++) await clock.advanceAsync(10_000);
    await recorder.flush();
    expect(recorder.stats.droppedRetriesExhausted).toBe(1);
    expect(fake.requests.length).toBe(3 + 12);
  });

  it('a 4xx refusal is dropped at once, logged with the error under err; a series write answered 404 creates the Event with its series', async () => {
    const logger = recordingLogger();
    const { fake, recorder } = setup({ logger });
    fake.next({ status: 422, body: statusBody(422, 'Invalid', 'bad event') });
    recorder.event(cellset, { type: 'Normal', reason: 'R', action: 'A', note: 'one' });
    await recorder.flush();
    expect(recorder.stats.droppedRejected).toBe(1);
    const dropped = logger.entries.find((e) => e.message === 'event refused by the apiserver: dropped');
    expect((dropped?.fields['err'] as Error | undefined)?.message).toContain('bad event');
    recorder.event(cellset, { type: 'Normal', reason: 'R', action: 'A', note: 'two' });
    await recorder.flush();
    fake.next({ status: 404, body: statusBody(404, 'NotFound', 'gone') });
    recorder.event(cellset, { type: 'Normal', reason: 'R', action: 'A', note: 'two' });
    await recorder.flush();
    expect(fake.requests.slice(-2).map((r) => r.method)).toEqual(['PATCH', 'POST']);
    expect(fake.requests.at(-1)!.body).toMatchObject({ note: 'two', series: { count: 2 } });
  });
});
