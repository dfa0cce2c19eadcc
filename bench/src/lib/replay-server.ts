/**
 * A replay of the embedded apiserver's exact bytes, served as fast as the socket takes them.
 *
 * Why: the embedded apiserver used to write each watch frame with its own `res.write` and delivered
 * 100–250 MB/s here, roughly the speed of `JSON.parse` itself, so against it every client measured
 * the test server. It now coalesces and paces its writes (testing's watch/frame-writer.ts) and
 * serves near this replay's rate (`pnpm --filter @reconcile-loop/bench serve-throughput -- --replay`
 * compares the two), but the replay still costs the machine almost no CPU, so a client measured
 * against it is measured alone. The replay captures one LIST body and the watch stream from a
 * cursor, byte for byte, then serves them in 256 KB writes honouring backpressure; a client that
 * falls behind reads full socket buffers, as it would from a real apiserver with a backlog.
 * Same path, same query handling the pipelines use: LIST (no `watch`) returns the body; `watch=true`
 * streams the frames and then holds the connection open like an idle watch. Bearer auth is checked.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BENCH_TOKEN, get, podsPath, podsWatchUrl } from './wire.js';

/** The one path the replay serves: the pod collection the pipelines read. */
const PATH = podsPath('');
const WRITE_SIZE = 256 * 1024;

/** The LIST body and the first `frames` watch lines from `resourceVersion`, as raw bytes. */
export async function capture(base: string, resourceVersion: string, frames: number): Promise<{ list: Buffer; watch: Buffer }> {
  const listResponse = await get(podsPath(base));
  const listChunks: Buffer[] = [];
  for await (const chunk of listResponse as AsyncIterable<Buffer>) listChunks.push(chunk);
  const list = Buffer.concat(listChunks);
  const watchChunks: Buffer[] = [];
  if (frames > 0) {
    const controller = new AbortController();
    const response = await get(podsWatchUrl(base, resourceVersion), controller.signal);
    let lines = 0;
    try {
      for await (const chunk of response as AsyncIterable<Buffer>) {
        let at = -1;
        while ((at = chunk.indexOf(10, at + 1)) !== -1) {
          if (++lines === frames) {
            watchChunks.push(chunk.subarray(0, at + 1));
            break;
          }
        }
        if (lines === frames) break;
        watchChunks.push(chunk);
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    } finally {
      controller.abort();
      response.destroy();
    }
    if (lines < frames) throw new Error(`capture: watch ended after ${lines} of ${frames} frames`);
  }
  return { list, watch: Buffer.concat(watchChunks) };
}

/** A running replay server. */
export interface ReplayServer {
  readonly url: string;
  /** Ends every open watch. */
  dropWatches(): number;
  close(): Promise<void>;
}

/** Serves `list` for LIST and `watch` for a watch from `resourceVersion` (any other cursor: 410). */
export async function startReplay(list: Buffer, watch: Buffer, resourceVersion: string): Promise<ReplayServer> {
  const watches = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://replay');
    if (req.headers.authorization !== `Bearer ${BENCH_TOKEN}`) {
      res
        .writeHead(401, { 'Content-Type': 'application/json' })
        .end('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}');
      return;
    }
    if (url.pathname !== PATH) {
      res.writeHead(404).end();
      return;
    }
    if (url.searchParams.get('watch') !== 'true') {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(list.length) }).end(list);
      return;
    }
    if (url.searchParams.get('resourceVersion') !== resourceVersion) {
      res
        .writeHead(410, { 'Content-Type': 'application/json' })
        .end('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    watches.add(res);
    res.on('close', () => watches.delete(res));
    let offset = 0;
    const pump = (): void => {
      while (offset < watch.length && !res.destroyed) {
        const end = Math.min(watch.length, offset + WRITE_SIZE);
        const ok = res.write(watch.subarray(offset, end));
        offset = end;
        if (!ok) {
          res.once('drain', pump);
          return;
        }
      }
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    dropWatches: () => {
      const n = watches.size;
      for (const res of watches) res.end();
      watches.clear();
      return n;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of watches) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
