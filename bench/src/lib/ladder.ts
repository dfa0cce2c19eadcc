/**
 * (e) The same work as our pipeline (parse, validate with the same schema, cache in an ObjectStore,
 * enqueue the parent in a WorkQueue) but driven synchronously from the socket's `data` events, with
 * no async iteration between the bytes and the store. Not a product: a rung of the ladder between
 * the transport floor (d) and our pipeline (a), so the report can say how much of (a) is the work
 * itself and how much is the per-frame async plumbing.
 */
import { compileSchema, objectKey, podSchema, type Pod } from '@reconcile-loop/k8s-types';
import { parseListPage, parseObject, parseWatchFrame } from '@reconcile-loop/k8s-types/internal';
import { ObjectStore, replaceEvent, upsertEvent, type ObjectKey } from '@reconcile-loop/object-store';
import { WorkQueue } from '@reconcile-loop/work-queue';
import { PARENT_LABEL } from './pods.js';
import { get, podsPath, podsWatchUrl } from './wire.js';

const schema = compileSchema(podSchema);

/** Runs (e) to the last frame; returns ms. */
export async function syncPipeline(base: string, resourceVersion: string, frames: number, pods: number): Promise<number> {
  const start = performance.now();
  const store = new ObjectStore<Pod, string>({ keyMap: (pod) => pod.metadata.labels[PARENT_LABEL] });
  const queue = new WorkQueue<string>();
  const enqueue = (parents: ReadonlySet<string>): void => {
    for (const parent of parents) queue.add(parent);
  };

  // The LIST body read from its bytes, as the reflector reads a page (`parseListPage`; an item the
  // byte reader cannot prove through `parseObject`).
  const listResponse = await get(podsPath(base));
  const chunks: Buffer[] = [];
  for await (const chunk of listResponse as AsyncIterable<Buffer>) chunks.push(chunk);
  const page = parseListPage(Buffer.concat(chunks), schema);
  chunks.length = 0;
  if (page === undefined) throw new Error('(e): the LIST body did not read as a page');
  const objects = new Map<ObjectKey, Pod>();
  for (const item of page.items) {
    const pod = item.view ?? parseObject(schema, item.raw, 'LIST');
    objects.set(objectKey(pod), pod);
  }
  enqueue(store.apply(replaceEvent(objects)));

  if (frames > 0) {
    const controller = new AbortController();
    const response = await get(podsWatchUrl(base, resourceVersion), controller.signal);
    await new Promise<void>((resolve, reject) => {
      let seen = 0;
      let rest: Buffer | undefined;
      response.on('data', (chunk: Buffer) => {
        const buffer = rest === undefined ? chunk : Buffer.concat([rest, chunk]);
        rest = undefined;
        let from = 0;
        let end: number;
        while ((end = buffer.indexOf(10, from)) !== -1) {
          const frame = parseWatchFrame(buffer.subarray(from, end), schema);
          from = end + 1;
          if (frame.type === 'ADDED' || frame.type === 'MODIFIED')
            enqueue(store.apply(upsertEvent(objectKey(frame.object), frame.object)));
          if (++seen === frames) {
            controller.abort();
            response.destroy();
            resolve();
            return;
          }
        }
        if (from < buffer.length) rest = buffer.subarray(from);
      });
      response.on('error', (error) => {
        if (!controller.signal.aborted) reject(error);
      });
      response.on('end', () => reject(new Error(`(e): watch ended after ${seen} of ${frames} frames`)));
    });
  }
  const ms = performance.now() - start;
  if (store.size !== pods) throw new Error(`(e): store holds ${store.size} pods, expected ${pods}`);
  return ms;
}
