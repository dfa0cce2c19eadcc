// One replica of the sharded-replicas e2e (test/sharded-replicas.test.ts): a separate process running
// a ReconcileLoop whose shard gate is a ShardMember on its own Lease, over the ConfigMaps of one
// namespace. The reconcile of a ConfigMap takes RECONCILE_MS (abortable), then records the spec it
// saw (`data.spec`) in the annotation `shard-e2e/observed`, through a merge patch that carries the
// resourceVersion it read (a precondition: a replica resumed after a freeze in the middle of a
// reconcile gets a 409 instead of overwriting a newer write).
//
// It prints one JSON line per event on stdout, with `Date.now()` (one clock for every process on
// this machine):
//   {"e":"ready","t"}                                   the member and the loop are running
//   {"e":"start","t","key","uid"}                       a reconcile began (after the gate admitted it)
//   {"e":"end","t","key","outcome"}                     it returned or threw (before the gate's release)
//   {"e":"store","t","ranges":[{start,end}],"keys":[…],"filter"}  every 250 ms: the gate's ranges and the primary
//                                                       store's keys, read at one instant, and who filters ('server' | 'client')
//   {"e":"log","level","message","fields"}              warnings and errors of the loop and the member
//   {"e":"exit","t"}                                     after a graceful stop (SIGTERM: the member releases its Lease)
import { KubeConfig } from '@kubernetes/client-node';
import { objectSchema } from '@reconcile-loop/k8s-types';
import { KubeClient } from '@reconcile-loop/kube-client';
import { ReconcileLoop } from '@reconcile-loop/loop';
import { sleep, systemClock } from '@reconcile-loop/primitives';
import { kubeReflector } from '@reconcile-loop/reflector';
import { ShardMember } from '@reconcile-loop/sharding';
import { z } from 'zod';

const [kubeconfigPath, namespace, ring, identity, reconcileMs] = process.argv.slice(2);
if (!kubeconfigPath || !namespace || !ring || !identity || !reconcileMs)
  throw new Error('usage: shard-replica <kubeconfig> <namespace> <ring> <identity> <reconcileMs>');
const emit = (e: string, extra: Record<string, unknown> = {}): void =>
  void process.stdout.write(`${JSON.stringify({ e, t: Date.now(), ...extra })}\n`);

const OBSERVED = 'shard-e2e/observed';
const kc = new KubeConfig();
kc.loadFromFile(kubeconfigPath);
const client = new KubeClient({ kubeConfig: kc, rateLimit: false });
const logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (fields: Record<string, unknown>, message: string) => emit('log', { level: 'warn', message, fields }),
  error: (fields: Record<string, unknown>, message: string) => emit('log', { level: 'error', message, fields }),
};
const schema = objectSchema({ data: z.record(z.string(), z.string()).optional() });
const configMaps = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' };
const writer = client.resource(configMaps).inNamespace(namespace);

const member = new ShardMember({
  client,
  namespace,
  ring,
  identity,
  // Short timings so the scenario takes seconds: client-go's ratios (lease > renew deadline > retry).
  leaseDurationMs: 4_000,
  renewDeadlineMs: 3_000,
  retryPeriodMs: 500,
  logger,
});
const source = kubeReflector({
  name: 'configmaps',
  kubeClient: client,
  resource: configMaps,
  schema,
  namespace,
  // Sent until the member has read the ring (the loop holds nothing before that); then its ranges replace them.
  shard: { field: 'uid', ranges: [{ start: '0x0000000000000000', end: '0x10000000000000000' }] },
  retry: { initialMs: 100, maxMs: 1_000 },
});
const loop = new ReconcileLoop({
  source,
  keyMap: (_object, key) => key,
  shard: { gate: member, retryDelayMs: 250 },
  logger,
  reconcile: async (key, ctx) => {
    const parent = ctx.parent;
    emit('start', { key, uid: parent?.metadata.uid });
    let outcome = 'done';
    try {
      if (parent === undefined) return;
      await sleep(systemClock, Number(reconcileMs), ctx.signal);
      const spec = parent.data?.['spec'];
      if (parent.metadata.annotations?.[OBSERVED] === spec) return;
      await writer.patch(parent.metadata.name, {
        type: 'merge',
        body: { metadata: { resourceVersion: parent.metadata.resourceVersion, annotations: { [OBSERVED]: spec } } },
      });
      outcome = 'wrote';
    } catch (error) {
      outcome = `error: ${(error as Error).name}`;
      throw error;
    } finally {
      emit('end', { key, outcome });
    }
  },
});

const stop = new AbortController();
process.on('SIGTERM', () => stop.abort());
const running = member.run(stop.signal);
await loop.start();
emit('ready');
const snapshots = setInterval(() => {
  const filter = source.health().shard?.filter;
  emit('store', { ranges: loop.health().shard?.ranges ?? [], keys: [...loop.store.keys()].sort(), filter });
}, 250);
await new Promise<void>((resolve) => stop.signal.addEventListener('abort', () => resolve(), { once: true }));
clearInterval(snapshots);
await loop.stop();
await running;
emit('exit');
process.exit(0);
