import http from 'node:http';
import { ApiServerProcess } from './src/lib/apiserver-process.js';
import { fetchList, fetchWatchLines, podsPath, BENCH_TOKEN, parseFloor, rawHttpParse } from './src/lib/wire.js';
const M = 30000;
const server = await ApiServerProcess.start(M + 6000);
await server.seed(5000);
const from = String((await server.revision()).revision);
await server.modify(M);
const body = await fetchList(server.url);
const lines = await fetchWatchLines(server.url, from, M);
const replay = await server.startReplay(from, M);
const url = `${podsPath(process.env.VIA === 'api' ? server.url : replay.url)}?watch=true&resourceVersion=${from}&timeoutSeconds=3600`;
const headers = { Authorization: `Bearer ${BENCH_TOKEN}` };
let sink: unknown;
function bytesOnly(): Promise<number> {
  const t = performance.now();
  return new Promise((resolve) => {
    http.get(url, { headers }, (res) => {
      let nl = 0;
      res.on('data', (c: Buffer) => { let i = -1; while ((i = c.indexOf(10, i + 1)) !== -1) nl++; if (nl >= M) { res.destroy(); resolve(performance.now() - t); } });
      res.on('error', () => {});
    }).on('error', () => {});
  });
}
function dataEventsParse(): Promise<number> {
  const t = performance.now();
  return new Promise((resolve) => {
    http.get(url, { headers }, (res) => {
      let n = 0; let rest: Buffer | undefined;
      res.on('data', (c: Buffer) => {
        let buf = rest ? Buffer.concat([rest, c]) : c; rest = undefined;
        let start = 0; let i;
        while ((i = buf.indexOf(10, start)) !== -1) { sink = JSON.parse(buf.toString('utf8', start, i)); start = i + 1; if (++n >= M) { res.destroy(); resolve(performance.now() - t); return; } }
        if (start < buf.length) rest = buf.subarray(start);
      });
      res.on('error', () => {});
    }).on('error', () => {});
  });
}
async function forAwaitParse(): Promise<number> {
  const t = performance.now();
  await rawHttpParseWatchOnly();
  return performance.now() - t;
}
async function rawHttpParseWatchOnly() {
  const ac = new AbortController();
  const res = await new Promise<http.IncomingMessage>((r) => http.get(url, { headers, signal: ac.signal }, r).on('error', () => {}));
  res.setEncoding('utf8');
  let partial = ''; let n = 0;
  try {
    outer: for await (const chunk of res as AsyncIterable<string>) {
      let from = 0; let end = chunk.indexOf('\n');
      while (end !== -1) { const line = partial === '' ? chunk.slice(from, end) : partial + chunk.slice(from, end); partial = ''; sink = JSON.parse(line); if (++n === M) break outer; from = end + 1; end = chunk.indexOf('\n', from); }
      partial += chunk.slice(from);
    }
  } catch {}
  ac.abort(); res.destroy();
}
for (let r = 0; r < 3; r++) {
  await server.dropWatches();
  const c0 = process.cpuUsage(); const t0 = performance.now();
  const b0 = await bytesOnly(); const c1 = process.cpuUsage(c0);
  console.log(`bytes only ${b0.toFixed(0)} ms wall, client cpu ${((c1.user + c1.system) / 1000).toFixed(0)} ms (user ${(c1.user/1000).toFixed(0)}, sys ${(c1.system/1000).toFixed(0)})`);
  await server.dropWatches();
  const c2 = process.cpuUsage(); const d0 = await dataEventsParse(); const c3 = process.cpuUsage(c2);
  console.log(`data+parse ${d0.toFixed(0)} ms wall, client cpu ${((c3.user + c3.system) / 1000).toFixed(0)} ms (user ${(c3.user/1000).toFixed(0)}, sys ${(c3.system/1000).toFixed(0)})`);
}
for (let r = 0; r < 3; r++) {
  const f = parseFloor('{}', lines); await server.dropWatches();
  const b = await bytesOnly(); await server.dropWatches();
  const d = await dataEventsParse(); await server.dropWatches();
  const a = await forAwaitParse(); await server.dropWatches();
  console.log(`watch ${M} frames: parse floor ${f.toFixed(0)} ms | bytes only ${b.toFixed(0)} (${(b/f).toFixed(2)}×) | data events+Buffer split+parse ${d.toFixed(0)} (${(d/f).toFixed(2)}×) | for-await utf8 split+parse ${a.toFixed(0)} (${(a/f).toFixed(2)}×)`);
}
await server.close();
