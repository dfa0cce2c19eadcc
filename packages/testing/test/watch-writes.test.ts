import { request, ServerResponse, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startApiServer, type ApiServer } from '../src/index.js';
import { COALESCE_BYTES } from '../src/watch/frame-writer.js';
import { PODS, watch, type Frame } from './helpers.js';

let server: ApiServer | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await server?.close();
  server = undefined;
});

/** Counts `res.write` calls (and their bytes) on watch responses: each is one chunk on the wire. */
function countWatchWrites(): { calls: () => number; bytes: () => number } {
  const spy = vi.spyOn(ServerResponse.prototype, 'write');
  const onWatch = (i: number): boolean => (spy.mock.contexts[i] as ServerResponse).req.url?.includes('watch=true') === true;
  return {
    calls: () => spy.mock.calls.filter((_, i) => onWatch(i)).length,
    bytes: () => spy.mock.calls.reduce((n, c, i) => n + (onWatch(i) ? Buffer.byteLength(c[0] as Buffer | string) : 0), 0),
  };
}

/** `count` updates of pod `p` in one synchronous run (one tick), each with its index and `blob`. */
function burst(s: ApiServer, count: number, blob: string): void {
  for (let i = 0; i < count; i++) {
    s.updatePod('default', 'p', (pod) => {
      pod.metadata.annotations = { i: String(i), blob };
    });
  }
}

/** Asserts `frames` are the burst's MODIFIED frames from revision `from + 1` on, in order, each one canonical JSON line. */
function expectBurst(frames: Frame[], from: number): void {
  frames.forEach((f, i) => {
    expect(f.raw).toBe(JSON.stringify(f.frame));
    expect(f.frame.type).toBe('MODIFIED');
    expect(f.frame.object.metadata.resourceVersion).toBe(String(from + 1 + i));
    expect(f.frame.object.metadata.annotations.i).toBe(String(i));
  });
}

describe('watch writes', () => {
  it('[testing: watch coalescing] frames committed in one tick reach the client in a few ~256 KB writes, in order and byte for byte', async () => {
    server = await startApiServer();
    const s = server;
    s.createPod({ metadata: { name: 'p', namespace: 'default' } });
    const from = s.revision;
    const live = await watch(s, `${PODS}?watch=true&resourceVersion=${from}`);
    await s.waitForWatches(1);
    const writes = countWatchWrites();
    const n = 2_000;
    // ≈ 10 MB: far past the socket's buffers, so the writer also waits for drain between writes.
    burst(s, n, 'x'.repeat(4 * 1024));
    const frames: Frame[] = [];
    for (let i = 0; i < n; i++) frames.push(await live.next());
    expectBurst(frames, from);
    const bytes = frames.reduce((sum, f) => sum + Buffer.byteLength(f.raw) + 1, 0);
    expect(writes.bytes()).toBe(bytes);
    // One write per frame before; now every write but the last holds at least COALESCE_BYTES, and at most one frame more.
    const largest = Math.max(...frames.map((f) => Buffer.byteLength(f.raw) + 1));
    expect(writes.calls()).toBeLessThanOrEqual(Math.ceil(bytes / COALESCE_BYTES));
    expect(writes.calls()).toBeGreaterThanOrEqual(Math.ceil(bytes / (COALESCE_BYTES + largest)));
    expect(writes.calls()).toBeLessThan(n / 40);
    // A watch replaying the same history from the same cursor reads the very same bytes.
    const replay = await watch(s, `${PODS}?watch=true&resourceVersion=${from}`);
    for (let i = 0; i < n; i++) expect((await replay.next()).raw).toBe(frames[i]!.raw);
    live.close();
    replay.close();
  });

  it('[testing: watch coalescing] frames written one tick apart are not held back for company', async () => {
    server = await startApiServer();
    const s = server;
    s.createPod({ metadata: { name: 'p', namespace: 'default' } });
    const from = s.revision;
    const w = await watch(s, `${PODS}?watch=true&resourceVersion=${from}`);
    await s.waitForWatches(1);
    const writes = countWatchWrites();
    for (let i = 0; i < 5; i++) {
      burst(s, 1, `tick-${i}`);
      // Each frame is on the wire before the next write: nothing waits for a fuller write.
      const f = await w.next();
      expect(f.frame.object.metadata.annotations.blob).toBe(`tick-${i}`);
    }
    expect(writes.calls()).toBe(5);
    w.close();
  });

  it('[testing: watch coalescing] across the slow-watcher bound: the frames up to the one that crossed it, in order, then EOF', async () => {
    const limit = 256 * 1024;
    server = await startApiServer({ maxWatchBufferBytes: limit });
    const s = server;
    s.createPod({ metadata: { name: 'p', namespace: 'default' } });
    const from = s.revision;
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(`${s.url}${PODS}?watch=true&resourceVersion=${from}`, resolve);
      req.on('error', reject);
      req.end();
    });
    res.pause();
    await s.waitForWatches(1);
    // 100 frames of ≈ 10 KB in one tick: nothing has left yet when the bound is crossed.
    burst(s, 100, 'y'.repeat(10 * 1024));
    expect(s.terminatedWatchCount).toBe(1);
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => {
      text += c;
    });
    await new Promise<void>((resolve, reject) => {
      res.on('end', resolve);
      res.on('error', reject);
      res.resume();
    });
    expect(text.endsWith('\n')).toBe(true);
    const frames = text
      .slice(0, -1)
      .split('\n')
      .map((raw) => ({ raw, frame: JSON.parse(raw) as Frame['frame'] }));
    expectBurst(frames, from);
    // Unsent bytes (queued frames included) crossed the bound with the last frame sent, not before.
    const sizes = frames.map((f) => Buffer.byteLength(f.raw) + 1);
    const total = sizes.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(limit);
    expect(total - sizes[sizes.length - 1]!).toBeLessThanOrEqual(limit);
    expect(frames.length).toBeLessThan(100);
  });
});
