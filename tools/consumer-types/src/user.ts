// A small user project, compiled against the packed packages (never the workspace sources) by
// scripts/consumer-types.mjs with moduleResolution node16 and bundler and skipLibCheck false. Each
// `@ts-expect-error` proves a type is precise, not `any`: an unused one is a compile error.
import { KubeConfig } from '@kubernetes/client-node';
import {
  objectKey,
  objectMetaSchema,
  objectSchema,
  podSchema,
  typeMetaShape,
  type ObjectMeta,
  type Pod,
} from '@reconcile-loop/k8s-types';
import { InProcessSource, ManualClock, ReconcileLoop } from '@reconcile-loop/loop';
import { Manager, type ManagerExit } from '@reconcile-loop/manager';
import { ObjectStore, replaceEvent } from '@reconcile-loop/object-store';
import { kubeReflector, podReflector } from '@reconcile-loop/reflector';
import { RetryScheduler } from '@reconcile-loop/retry-scheduler';
import { StreamDriver } from '@reconcile-loop/stream-driver';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { WorkQueue } from '@reconcile-loop/work-queue';
import { z } from 'zod';

// A custom resource with extended metadata, apiVersion/kind kept (the k8s-types README's example).
const widgetSchema = objectSchema({
  ...typeMetaShape,
  metadata: objectMetaSchema.extend({ generateName: z.string().optional() }),
  spec: z.object({ size: z.number().int() }),
});
export type Widget = z.output<typeof widgetSchema>;
const widget: Widget = widgetSchema.parse({ metadata: { name: 'w' }, spec: { size: 1 } });
const generateName: string | undefined = widget.metadata.generateName;
const finalizers: readonly string[] | undefined = widget.metadata.finalizers;
// @ts-expect-error finalizers may be absent
const firstFinalizer: string = widget.metadata.finalizers[0];
// @ts-expect-error spec.size is a number
const size: string = widget.spec.size;
const meta: ObjectMeta = podSchema.parse({ metadata: { name: 'p' } }).metadata;
const owners: readonly { uid: string }[] = meta.ownerReferences;

export async function run(): Promise<string[]> {
  const seen: string[] = [
    generateName ?? '',
    String(finalizers?.length),
    String(firstFinalizer),
    String(size),
    String(owners.length),
  ];
  const server: ApiServer = await startApiServer();
  try {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(server.kubeconfig());
    const pods = podReflector({ kubeConfig, namespace: 'default' });
    const widgets = kubeReflector({
      kubeConfig,
      resource: { group: 'example.com', version: 'v1', plural: 'widgets' },
      schema: widgetSchema,
      namespace: 'default',
    });
    const clock = new ManualClock();
    await using loop = new ReconcileLoop<Pod, string>({
      source: pods,
      keyMap: (pod) => pod.metadata.labels['pool'],
      reconcile: async (pool, { members }) => {
        for (const pod of members.values())
          seen.push(`${pool}:${objectKey(pod)}:${pod.metadata.deletionGracePeriodSeconds ?? 0}`);
      },
      clock,
    });
    void widgets;
    void loop;
    // A manager: shared sources are typed by their schema, controllers by their options.
    const manager = new Manager({ kubeConfig, signals: false });
    const managed = manager.controller({
      controller: { name: 'widgets' },
      source: manager.source({ resource: { group: 'example.com', version: 'v1', plural: 'widgets' }, schema: widgetSchema }),
      keyMap: (_widget, key) => key,
      reconcile: async (_key, { parent }) => {
        // @ts-expect-error spec.size is a number
        const wrong: string | undefined = parent?.spec.size;
        void wrong;
      },
    });
    seen.push(managed.state);
    const exit: Promise<ManagerExit> = Promise.resolve({ code: 0, error: undefined, controller: undefined });
    void exit;
  } finally {
    await server.close();
  }
  const store = new ObjectStore<{ p: string }, string>({ keyMap: (o) => o.p });
  store.apply(replaceEvent([['k', { p: 'x' }]]));
  const queue = new WorkQueue<string>();
  queue.add('a');
  const retries = new RetryScheduler<string>({ onRetry() {} });
  retries.shutdown();
  const source = new InProcessSource<{ p: string }>('cells', []);
  seen.push(typeof StreamDriver, String(queue.size), String(store.members('x').size), source.name);
  return seen;
}
