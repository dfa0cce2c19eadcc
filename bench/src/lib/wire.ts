/**
 * Raw HTTP against the apiserver: the exact bytes a client receives (for the JSON.parse floor),
 * and a minimal HTTP + split + JSON.parse client (the transport floor), with the bench bearer token.
 */
import http from 'node:http';
import { NAMESPACE } from './pods.js';

/** The bearer token the bench apiserver requires (so the pipelines' KubeConfig auth is exercised). */
export const BENCH_TOKEN = 'bench-token';

/** GET `url` with the bench token; rejects on any status but 200 (draining that response). */
export function get(url: string, signal?: AbortSignal): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const headers = { Accept: 'application/json', Authorization: `Bearer ${BENCH_TOKEN}` };
    const request = http.get(url, { headers, ...(signal && { signal }) }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`GET ${url}: HTTP ${String(response.statusCode)}`));
        return;
      }
      resolve(response);
    });
    request.on('error', reject);
  });
}

/** The pod collection path every benchmark reads. */
export function podsPath(base: string): string {
  return `${base}/api/v1/namespaces/${NAMESPACE}/pods`;
}

/** A watch on the pod collection from `resourceVersion` that the server will not time out during a run. */
export function podsWatchUrl(base: string, resourceVersion: string): string {
  return `${podsPath(base)}?watch=true&resourceVersion=${resourceVersion}&timeoutSeconds=3600`;
}

/** The LIST body as the server sends it. */
export async function fetchList(base: string): Promise<string> {
  const response = await get(podsPath(base));
  response.setEncoding('utf8');
  let body = '';
  for await (const chunk of response as AsyncIterable<string>) body += chunk;
  return body;
}

/** Reads `count` watch lines from `resourceVersion`, then hangs up. */
export async function fetchWatchLines(base: string, resourceVersion: string, count: number): Promise<string[]> {
  const lines: string[] = [];
  if (count === 0) return lines;
  const controller = new AbortController();
  const response = await get(podsWatchUrl(base, resourceVersion), controller.signal);
  response.setEncoding('utf8');
  let partial = '';
  try {
    for await (const chunk of response as AsyncIterable<string>) {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop()!;
      for (const part of parts) if (part !== '') lines.push(part);
      if (lines.length >= count) break;
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    controller.abort();
    response.destroy();
  }
  if (lines.length < count) throw new Error(`watch ended after ${lines.length} of ${count} lines`);
  return lines.slice(0, count);
}

let sink: unknown;

/** (c) The floor: `JSON.parse` of the list body and of every watch line, nothing else. */
export function parseFloor(listBody: string, lines: readonly string[]): number {
  const start = performance.now();
  sink = JSON.parse(listBody);
  for (let i = 0; i < lines.length; i++) sink = JSON.parse(lines[i]!);
  const ms = performance.now() - start;
  sink = undefined;
  return ms;
}

/** (d) Transport floor: LIST and WATCH over raw node:http, split lines, JSON.parse; no cache, no validation. */
export async function rawHttpParse(base: string, resourceVersion: string, frames: number): Promise<number> {
  const start = performance.now();
  sink = JSON.parse(await fetchList(base));
  if (frames > 0) {
    const controller = new AbortController();
    const response = await get(podsWatchUrl(base, resourceVersion), controller.signal);
    response.setEncoding('utf8');
    let partial = '';
    let seen = 0;
    try {
      outer: for await (const chunk of response as AsyncIterable<string>) {
        let from = 0;
        let end = chunk.indexOf('\n');
        while (end !== -1) {
          const line = partial === '' ? chunk.slice(from, end) : partial + chunk.slice(from, end);
          partial = '';
          sink = JSON.parse(line);
          if (++seen === frames) break outer;
          from = end + 1;
          end = chunk.indexOf('\n', from);
        }
        partial += chunk.slice(from);
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    } finally {
      controller.abort();
      response.destroy();
    }
    if (seen < frames) throw new Error(`raw watch ended after ${seen} of ${frames} frames`);
  }
  const ms = performance.now() - start;
  sink = undefined;
  return ms;
}
