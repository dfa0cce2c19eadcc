// One replica of the leader-election e2e: a separate process competing for a Lease on the real
// kube-apiserver. It prints one JSON line per event on stdout, with wall-clock times (Date.now(),
// one clock for every process on this machine):
//   {"e":"ready"}                     the elector is running (warm standby)
//   {"e":"started","t":…}             onStartedLeading
//   {"e":"stopped","t":…}             onStoppedLeading
//   {"e":"tick","t":…}                a "reconcile": done only while isLeader() (checked right before)
//   {"e":"released","t":…}            the Lease was released on SIGTERM
//   {"e":"recovered","t":…,"failures":n}  the Lease could be read again after n failed reads
//   {"e":"log","level":"warn"|"error",…}  the elector's warnings and errors
//   {"e":"exit","t":…}
// SIGTERM stops gracefully (ReleaseOnCancel); SIGKILL/SIGSTOP are the test's business.
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '@reconcile-loop/kube-client';
import { LeaderElector, LeaseLock, runWhenLeader } from '@reconcile-loop/leader-election';

const [kubeconfigPath, namespace, name, identity] = process.argv.slice(2);
if (!kubeconfigPath || !namespace || !name || !identity)
  throw new Error('usage: leader-replica <kubeconfig> <namespace> <lease> <identity>');
const emit = (e: string, extra: Record<string, unknown> = {}): void =>
  void process.stdout.write(`${JSON.stringify({ e, t: Date.now(), ...extra })}\n`);

const kc = new KubeConfig();
kc.loadFromFile(kubeconfigPath);
const client = new KubeClient({ kubeConfig: kc, rateLimit: false });
const logger = {
  debug: () => undefined,
  info: (fields: Record<string, unknown>, message: string) =>
    message === 'released the leader lease'
      ? emit('released')
      : message === 'the lease can be read again'
        ? emit('recovered', { failures: fields['failures'] })
        : undefined,
  warn: (fields: Record<string, unknown>, message: string) => emit('log', { level: 'warn', message, fields }),
  error: (fields: Record<string, unknown>, message: string) => emit('log', { level: 'error', message, fields }),
};
const elector = new LeaderElector({
  lock: new LeaseLock({ client, namespace, name, identity }),
  leaseDurationMs: 3_000,
  renewDeadlineMs: 2_000,
  retryPeriodMs: 500,
  logger,
  onStartedLeading: () => emit('started'),
  onStoppedLeading: () => emit('stopped'),
});
const controller = new AbortController();
process.on('SIGTERM', () => controller.abort());

// The "loop": reconciles every 50 ms, but only when the gate says so at that very instant.
const work = (signal: AbortSignal): Promise<void> =>
  new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (elector.isLeader()) emit('tick');
    }, 50);
    signal.addEventListener('abort', () => (clearInterval(timer), resolve()), { once: true });
  });

emit('ready');
await runWhenLeader({ elector, start: work, signal: controller.signal, logger });
emit('exit');
process.exit(0);
