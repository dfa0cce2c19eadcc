import type { ApiServerProcess } from './apiserver-process.js';
import { fetchList, fetchWatchLines } from './wire.js';

/** The throughput workload on a running apiserver child, as the diagnostics scripts read it. */
export interface Workload {
  /** The revision after the `pods` were created: pipelines LIST it and watch from it. */
  readonly watchFrom: string;
  /** The LIST body and the `frames` watch lines, byte for byte, for the `JSON.parse` floor. */
  readonly listBody: string;
  readonly lines: readonly string[];
  /** The replay server of those bytes, and a kubeconfig pointing at it. */
  readonly replayUrl: string;
  readonly replayKubeconfig: string;
}

/** Seeds `pods`, commits `frames` modifications, captures the floor's bytes and starts their replay. */
export async function prepareWorkload(server: ApiServerProcess, pods: number, frames: number): Promise<Workload> {
  await server.seed(pods);
  const watchFrom = String((await server.revision()).revision);
  await server.modify(frames);
  const listBody = await fetchList(server.url);
  const lines = await fetchWatchLines(server.url, watchFrom, frames);
  const replayUrl = (await server.startReplay(watchFrom, frames)).url;
  return { watchFrom, listBody, lines, replayUrl, replayKubeconfig: server.kubeconfig.replace(server.url, replayUrl) };
}
