import type { ApiServerProcess } from './apiserver-process.js';
import { settleHeap } from './heap.js';
import { fmt, summarize } from './stats.js';

/**
 * Runs each mode once per round, in the same order, after one unmeasured warm-up round, and prints
 * min / median / max of the ms each run returns, per mode, with its ratio to `floor`'s median.
 * Alternating in one process keeps a noisy machine's drift out of the comparison (`ab.ts`:
 * `scan-ab`, `socket-ab`…; `list-read`). Every run starts after a settled heap, and the server's
 * watches (when there is a server) are dropped after it.
 */
export async function alternate<M extends string>(
  server: ApiServerProcess | undefined,
  modes: readonly M[],
  floor: NoInfer<M>,
  runs: number,
  runOne: (mode: M) => Promise<number> | number,
  title: string,
): Promise<void> {
  const samples = new Map<M, number[]>(modes.map((mode) => [mode, []]));
  for (let round = 0; round <= runs; round++) {
    for (const mode of modes) {
      await settleHeap();
      const ms = await runOne(mode);
      if (round > 0) samples.get(mode)!.push(ms);
      await server?.dropWatches();
    }
  }
  const floorMedian = summarize(samples.get(floor)!).median;
  console.log(`${title}; ms, min / median / max of ${runs}`);
  const width = Math.max(...modes.map((mode) => mode.length)) + 1;
  for (const mode of modes) {
    const s = summarize(samples.get(mode)!);
    console.log(
      `  ${mode.padEnd(width)} ${fmt(s.min)} / ${fmt(s.median)} / ${fmt(s.max)}  ${(s.median / floorMedian).toFixed(3)}× the floor`,
    );
  }
}
