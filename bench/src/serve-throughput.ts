/**
 * How fast the embedded apiserver itself serves a watch backlog: one watcher reads `--frames`
 * MODIFIED pod frames (default 50,000, as the throughput benchmark seeds them) from the LIST's
 * revision, and the client does nothing but count newlines, so the number is the server's
 * (serialization, socket writes, chunked framing), not a parser's. Also the LIST body's rate.
 *
 *   pnpm --filter @reconcile-loop/bench serve-throughput -- --pods=5000 --frames=50000 --runs=5 [--cpu-prof]
 *
 * `--replay` also measures the replay server (bench/src/lib/replay-server.ts) serving the same bytes
 * from memory in 256 KB writes: the client's and the machine's ceiling, for comparison.
 * `--cpu-prof` profiles the apiserver child during the measured runs only (bench/results/serve-profile.cpuprofile.json;
 * summarize it with bench/src/profile-summary.ts).
 * Not part of `pnpm bench`: a diagnostic for the server the benchmarks read from (issue 15).
 */
import { mkdir } from 'node:fs/promises';
import http from 'node:http';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiServerProcess } from './lib/apiserver-process.js';
import { fmt, summarize } from './lib/stats.js';
import { BENCH_TOKEN, fetchList, podsPath, podsWatchUrl } from './lib/wire.js';

const args = process.argv.slice(2).filter((a) => a !== '--');
const arg = (name: string, fallback: string): string =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const pods = Number(arg('pods', '5000'));
const frames = Number(arg('frames', '50000'));
const runs = Number(arg('runs', '5'));
const profile = args.includes('--cpu-prof');
const withReplay = args.includes('--replay');
const profileFile = join(dirname(fileURLToPath(import.meta.url)), '..', 'results', 'serve-profile.cpuprofile.json');

/** GETs `url` and reads until `lines` newlines arrived (0: to EOF); returns bytes read and ms. */
function readLines(url: string, lines: number): Promise<{ bytes: number; ms: number; chunks: number }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let bytes = 0;
    let seen = 0;
    let chunks = 0;
    const req = http.get(url, { headers: { Accept: 'application/json', Authorization: `Bearer ${BENCH_TOKEN}` } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET ${url}: HTTP ${String(res.statusCode)}`));
        return;
      }
      res.on('data', (chunk: Buffer) => {
        chunks++;
        bytes += chunk.length;
        if (lines === 0) return;
        let at = -1;
        while ((at = chunk.indexOf(10, at + 1)) !== -1) {
          if (++seen === lines) {
            resolve({ bytes, ms: performance.now() - start, chunks });
            req.destroy();
            return;
          }
        }
      });
      res.on('end', () =>
        lines === 0
          ? resolve({ bytes, ms: performance.now() - start, chunks })
          : reject(new Error(`EOF after ${seen} of ${lines} lines`)),
      );
      res.on('error', (e) => {
        if (seen < lines) reject(e);
      });
    });
    req.on('error', (e) => {
      if (seen < lines || lines === 0) reject(e);
    });
  });
}

const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const server = await ApiServerProcess.start(pods + frames + 100);
try {
  await server.seed(pods);
  const watchFrom = String((await server.revision()).revision);
  const modified = await server.modify(frames);
  console.log(`seeded ${pods} pods, ${frames} writes (${(modified.ms / frames).toFixed(2)} ms each); load ${load()}`);
  // Warm-up: JIT, and the server serializes (and caches) every frame once, as in the benchmark.
  const listBytes = Buffer.byteLength(await fetchList(server.url));
  await readLines(podsWatchUrl(server.url, watchFrom), frames);
  await server.dropWatches();
  const measure = async (label: string, base: string): Promise<void> => {
    const watch: number[] = [];
    const list: number[] = [];
    const watchCpu: number[] = [];
    const listCpu: number[] = [];
    let watchBytes = 0;
    let chunks = 0;
    for (let r = 0; r < runs; r++) {
      const cpu0 = await server.cpuMs();
      const w = await readLines(podsWatchUrl(base, watchFrom), frames);
      await server.dropWatches();
      const cpu1 = await server.cpuMs();
      watchCpu.push(cpu1 - cpu0);
      watchBytes = w.bytes;
      chunks = w.chunks;
      watch.push(w.bytes / 1e6 / (w.ms / 1000));
      const l = await readLines(podsPath(base), 0);
      listCpu.push((await server.cpuMs()) - cpu1);
      list.push(l.bytes / 1e6 / (l.ms / 1000));
    }
    const ws = summarize(watch);
    const ls = summarize(list);
    console.log(
      `${label}: watch backlog of ${frames} frames, ${fmt(watchBytes / 1e6)} MB in ${chunks} client reads (${fmt(watchBytes / chunks / 1024)} KB each): ` +
        `${fmt(ws.min)} / ${fmt(ws.median)} / ${fmt(ws.max)} MB/s; LIST ${fmt(listBytes / 1e6)} MB: ${fmt(ls.min)} / ${fmt(ls.median)} / ${fmt(ls.max)} MB/s ` +
        `(min / median / max of ${runs}); load ${load()}`,
    );
    // CPU time of the serving process (the replay server runs in the same child), medians: what
    // serving costs the machine, less sensitive to the other workers' load than MB/s.
    const wc = summarize(watchCpu).median;
    console.log(
      `${label}: server CPU per watch backlog ${fmt(wc)} ms (${fmt(wc / (watchBytes / 1e6))} ms/MB), per LIST ${fmt(summarize(listCpu).median)} ms`,
    );
  };
  if (profile) await server.profileStart();
  await measure('apiserver', server.url);
  if (profile) {
    await mkdir(dirname(profileFile), { recursive: true });
    await server.profileStop(profileFile);
    console.log(`server profile of the measured runs: ${profileFile}`);
  }
  if (withReplay) {
    const replay = await server.startReplay(watchFrom, frames);
    await readLines(podsWatchUrl(replay.url, watchFrom), frames);
    await server.dropWatches();
    await measure('replay', replay.url);
  }
} finally {
  await server.close();
}
