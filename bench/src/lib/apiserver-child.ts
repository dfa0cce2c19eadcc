/**
 * Child-process entry: hosts the embedded apiserver on its own event loop and heap, so its CPU runs
 * on the other core and its memory never shows up in the measuring process's heap. Driven over IPC
 * by {@link ./apiserver-process.ts}.
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { makePod, modifyPod, NAMESPACE, podName, SENT_AT_ANNOTATION, type PodJson } from './pods.js';
import type { ChildReply, ChildRequest } from './apiserver-process.js';
import { capture, startReplay, type ReplayServer } from './replay-server.js';
import { BENCH_TOKEN } from './wire.js';

let server: ApiServer | undefined;
let replay: ReplayServer | undefined;
let pods = 0;
let profiler: Session | undefined;
let seq = 0;

function need(): ApiServer {
  if (server === undefined) throw new Error('apiserver not started');
  return server;
}

function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Commits one modification of pod `seq % pods` (round robin, so every pod changes equally often). */
function writeOne(): void {
  const i = seq % pods;
  const s = seq++;
  need().updatePod(NAMESPACE, podName(i), (pod) => modifyPod(pod as unknown as PodJson, s) as never);
}

/**
 * Sends `rate` MODIFIED frames per second for `durationMs` into every open watch, each carrying its
 * send time. Injected rather than committed: the registry's write path costs ~0.5 ms per write,
 * which would make the test server, not the pipeline, the thing measured at 2,000 events/s. A late
 * tick sends every frame that is due (no coordinated omission).
 */
async function inject(rate: number, durationMs: number): Promise<{ frames: number; maxBehindMs: number }> {
  const s = need();
  const base = Array.from({ length: pods }, (_, i) => makePod(i));
  const firstRv = s.revision + 1;
  const start = performance.now();
  const total = Math.round((rate * durationMs) / 1000);
  let frames = 0;
  let maxBehindMs = 0;
  while (frames < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
    if (due - frames > 1) maxBehindMs = Math.max(maxBehindMs, ((due - frames - 1) * 1000) / rate);
    while (frames < due) {
      const i = frames % pods;
      const pod = modifyPod(base[i]!, frames, { [SENT_AT_ANNOTATION]: wallNow().toFixed(3) });
      pod.metadata.resourceVersion = String(firstRv + frames);
      s.injectWatchFrame({ type: 'MODIFIED', object: pod });
      frames++;
    }
    const wait = start + (frames * 1000) / rate - performance.now();
    await new Promise((r) => setTimeout(r, Math.max(0, Math.floor(wait))));
  }
  return { frames, maxBehindMs };
}

/** Rewrites watch frame `index` so its pod fails the pod schema (`status.phase` a number): one poison object. */
function poison(watch: Buffer, index: number): { watch: Buffer; key: string } {
  const lines = watch.toString('utf8').split('\n');
  const frame = JSON.parse(lines[index] ?? 'null') as { object?: PodJson & { status: Record<string, unknown> } } | null;
  if (frame?.object === undefined) throw new Error(`poison: no watch frame at ${index}`);
  frame.object.status['phase'] = 7;
  lines[index] = JSON.stringify(frame);
  return {
    watch: Buffer.from(lines.join('\n'), 'utf8'),
    key: `${frame.object.metadata.namespace}/${frame.object.metadata.name}`,
  };
}

async function handle(req: ChildRequest): Promise<unknown> {
  switch (req.cmd) {
    case 'start': {
      // maxWatchBufferBytes 0: a measured watch replays 250 MB of history at once, far past the
      // server's slow-watcher bound (16 MiB unsent), which would otherwise close it mid-run.
      server = await startApiServer({
        maxHistory: req.maxHistory,
        bookmarkIntervalMs: 3_600_000,
        token: BENCH_TOKEN,
        maxWatchBufferBytes: 0,
        ...(req.shardedListAndWatch !== undefined && { shardedListAndWatch: req.shardedListAndWatch }),
      });
      return { url: server.url, kubeconfig: server.kubeconfig() };
    }
    case 'seed': {
      const s = need();
      for (let i = pods; i < pods + req.count; i++) {
        const pod = makePod(i);
        delete (pod.metadata as Record<string, unknown>)['resourceVersion'];
        s.createPod(pod as never);
      }
      pods += req.count;
      return { revision: s.revision };
    }
    case 'modify': {
      const start = performance.now();
      for (let k = 0; k < req.count; k++) writeOne();
      return { revision: need().revision, ms: performance.now() - start };
    }
    case 'inject':
      return inject(req.rate, req.durationMs);
    case 'clock':
      return { wall: wallNow() };
    case 'revision':
      return { revision: need().revision };
    case 'waitForWatches':
      await need().waitForWatches(req.count, req.timeoutMs);
      return { open: need().openWatchCount };
    case 'openWatches':
      return { open: need().openWatchCount };
    case 'dropWatches':
      return { dropped: need().dropWatches() + (replay?.dropWatches() ?? 0) };
    case 'startReplay': {
      await replay?.close();
      const bytes = await capture(need().url, req.resourceVersion, req.frames);
      const poisoned = req.poisonFrame === undefined ? undefined : poison(bytes.watch, req.poisonFrame);
      replay = await startReplay(bytes.list, poisoned?.watch ?? bytes.watch, req.resourceVersion);
      return {
        url: replay.url,
        listBytes: bytes.list.length,
        watchBytes: (poisoned?.watch ?? bytes.watch).length,
        ...(poisoned && { poisonedKey: poisoned.key }),
      };
    }
    case 'heap':
      return { heapUsed: process.memoryUsage().heapUsed };
    case 'cpu': {
      const { user, system } = process.cpuUsage();
      return { ms: (user + system) / 1000 };
    }
    case 'profileStart': {
      profiler = new Session();
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.start');
      return {};
    }
    case 'profileStop': {
      if (profiler === undefined) throw new Error('profileStop: no profile running');
      const { profile } = await profiler.post('Profiler.stop');
      profiler.disconnect();
      profiler = undefined;
      await writeFile(req.file, JSON.stringify(profile));
      return {};
    }
    case 'close':
      await replay?.close();
      await server?.close();
      server = undefined;
      setImmediate(() => process.exit(0));
      return {};
  }
}

process.on('message', (message: ChildRequest) => {
  handle(message).then(
    (value) => process.send!({ id: message.id, ok: true, value } satisfies ChildReply),
    (error: unknown) =>
      process.send!({
        id: message.id,
        ok: false,
        error: error instanceof Error ? `${error.stack ?? error.message}` : String(error),
      } satisfies ChildReply),
  );
});
// The parent went away (finished, failed or timed out): nothing left to serve.
process.on('disconnect', () => process.exit(0));
process.send!({ id: 0, ok: true, value: 'ready' } satisfies ChildReply);
