/**
 * The main job. Without a kubeconfig it plays the CellSet story on the embedded apiserver and exits
 * 0; with `KUBECONFIG` (or `--kubeconfig`, or `--controller`) it runs the CellSet controller against
 * that cluster until SIGTERM/SIGINT.
 *
 *   node dist/main.js --controller --namespace cells   # production: the built entry (`pnpm --filter @reconcile-loop/example-cellset build`)
 *   pnpm demo                                   # the story, about 15 s
 *   pnpm demo --budget-scale 1                  # the same with the real 0/1/5/30 s budget (about 45 s)
 *   pnpm demo --shards 3                        # scaled out: 3 replica processes share the CellSets (shards.ts)
 *   KUBECONFIG=~/.kube/config pnpm demo --namespace cells --metrics-port 8080   # the controller
 *   ./dev demo pool-tracker [flags]             # the earlier pool-tracker demo (--replicas, --controller, --fault, ...)
 */
import { parseArgs } from 'node:util';
import { runStory } from './story.js';
import { runController } from './run.js';
import { MAX_SHARDS, MIN_SHARDS, runShards } from './shards.js';

const usage = `usage: pnpm demo [--budget-scale <x>] [--verbose]
       pnpm demo --shards <n> [--verbose]
       pnpm demo --controller [--kubeconfig <path>] [--namespace <ns>] [--metrics-port <port>] [--metrics-host <addr>]
                 [--rebuild-delays <s,s,...>] [--lease-duration <s>] [--renew-deadline <s>] [--retry-period <s>] [--sync-timeout <s>]
                 [--shutdown-grace <s>] [--workers <n>] [--write-qps <n>] [--write-burst <n>]
  --workers: reconciles at once (default 4); --write-qps/--write-burst: the reconcile writes' client-side
    token bucket (default 20/30; Events and the Lease have their own)
  no kubeconfig: the CellSet story on an embedded apiserver (exit 0 at the end)
  --shards <n>: the controller scaled out on the embedded apiserver (KUBECONFIG ignored): n replica processes (${MIN_SHARDS}-${MAX_SHARDS})
    share the CellSets on a ring of Leases; they join one by one, one is killed (kill -9), another paused (SIGSTOP) and
    resumed; exit 0 when no CellSet was reconciled by two replicas at once and every CellSet converged
  KUBECONFIG, --kubeconfig or --controller: the CellSet controller on that cluster, until SIGTERM/SIGINT
    (installs the CRD when its identity may; the least-privilege Role is examples/cellset/deploy/rbac.yaml)
  CELLSET_PAUSE_AFTER_CREATES=n pauses the controller right after its n-th pod create (a kill -9 test's hook)
  the pool-tracker demo and its flags (--replicas, --source, --fault, ...): ./dev demo pool-tracker --help`;

const POOL_TRACKER_FLAGS = [
  '--replicas',
  '--source',
  '--selector',
  '--pool-label',
  '--fault',
  '--duration',
  '--health-port',
  '--kill-after',
];

class UsageError extends Error {}

function number(name: string, text: string | undefined, check: (n: number) => boolean, hint = ''): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || !check(n))
    throw new UsageError(`${/^[A-Z_]+$/.test(name) ? name : `--${name}`}: not a usable value: ${JSON.stringify(text)}${hint}`);
  return n;
}

async function main(): Promise<number> {
  // biome-ignore lint/suspicious/noImplicitAnyLet: typed by the parseArgs call that assigns it in the try below (an evolving let)
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        controller: { type: 'boolean', default: false },
        kubeconfig: { type: 'string' },
        namespace: { type: 'string', default: 'default' },
        'metrics-port': { type: 'string' },
        'metrics-host': { type: 'string', default: '127.0.0.1' },
        'rebuild-delays': { type: 'string' },
        'lease-duration': { type: 'string' },
        'renew-deadline': { type: 'string' },
        'retry-period': { type: 'string' },
        'sync-timeout': { type: 'string' },
        'shutdown-grace': { type: 'string' },
        workers: { type: 'string' },
        'write-qps': { type: 'string' },
        'write-burst': { type: 'string' },
        'budget-scale': { type: 'string' },
        shards: { type: 'string' },
        verbose: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    const flag = POOL_TRACKER_FLAGS.find((f) => process.argv.includes(f));
    console.error(
      `${(error as Error).message}${flag ? `\n${flag} is a flag of the pool-tracker demo: ./dev demo pool-tracker ${flag} …` : ''}\n${usage}`,
    );
    return 2;
  }
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const abort = new AbortController();
  const onSignal = (): void => abort.abort();
  // `on`, not `once`: a signal sent to the process group (Ctrl-C, a group kill) arrives twice, once
  // directly and once relayed by tsx; the second must not hit Node's default handler mid-stop.
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    if (values.shards !== undefined) {
      const whole = (n: number) => Number.isInteger(n) && n >= MIN_SHARDS && n <= MAX_SHARDS;
      const shards = number('shards', values.shards, whole, ` (replicas: a whole number from ${MIN_SHARDS} to ${MAX_SHARDS})`);
      if (values.controller || values.kubeconfig !== undefined)
        throw new UsageError('--shards plays on the embedded apiserver: it takes neither --controller nor --kubeconfig');
      console.log(`The CellSet controller (examples/cellset) scaled out: ${shards} replica processes share the CellSets.`);
      const report = await runShards({
        shards: shards!,
        print: (line) => console.log(line),
        printError: (line) => console.error(line),
        verbose: values.verbose,
        signal: abort.signal,
      });
      const ok = report.overlaps.length === 0 && report.converged === report.cellSets;
      console.log(
        `${ok ? 'done' : 'FAILED'}: ${report.joined.length} replicas joined, ${report.killed} killed, ${report.paused} paused and resumed; ${report.converged}/${report.cellSets} CellSets converged; ${report.overlaps.length} overlaps in ${report.reconciles} reconciles`,
      );
      return ok ? 0 : 1;
    }
    const kubeconfig = values.kubeconfig ?? process.env['KUBECONFIG'];
    if (values.controller || kubeconfig) {
      const seconds = (name: string) => number(name, values[name as 'lease-duration'], (n) => n > 0);
      const delays = values['rebuild-delays']?.split(',').map((s) => number('rebuild-delays', s.trim(), (n) => n >= 0)! * 1000);
      if (delays !== undefined && delays[0] !== 0) throw new UsageError('--rebuild-delays must start with 0');
      const pause = number(
        'CELLSET_PAUSE_AFTER_CREATES',
        process.env['CELLSET_PAUSE_AFTER_CREATES'],
        (n) => Number.isInteger(n) && n > 0,
      );
      const metricsPort = number('metrics-port', values['metrics-port'], (n) => Number.isInteger(n) && n >= 0 && n <= 65_535);
      const ms = (s: number | undefined) => (s === undefined ? undefined : s * 1000);
      const keepAlive = setInterval(() => {}, 1 << 30); // the loop's timers are unref'd
      try {
        return await runController({
          ...(values.kubeconfig !== undefined && { kubeconfig: values.kubeconfig }),
          namespace: values.namespace,
          metricsPort,
          metricsHost: values['metrics-host'],
          rebuildDelaysMs: delays,
          leaseDurationMs: ms(seconds('lease-duration')),
          renewDeadlineMs: ms(seconds('renew-deadline')),
          retryPeriodMs: ms(seconds('retry-period')),
          syncTimeoutMs: ms(seconds('sync-timeout')),
          shutdownGraceMs: ms(seconds('shutdown-grace')),
          workers: number('workers', values.workers, (n) => Number.isInteger(n) && n >= 1 && n <= 64),
          writeQps: number('write-qps', values['write-qps'], (n) => n > 0),
          writeBurst: number('write-burst', values['write-burst'], (n) => Number.isInteger(n) && n >= 1),
          pauseAfterCreates: pause,
          signal: abort.signal,
          print: (line) => console.log(line),
          printError: (line) => console.error(line),
        });
      } finally {
        clearInterval(keepAlive);
      }
    }
    const budgetScale = number('budget-scale', values['budget-scale'], (n) => n > 0 && n <= 10);
    console.log('The CellSet controller (examples/cellset): one ReconcileLoop over CellSets and the pods they own.');
    const report = await runStory({
      print: (line) => console.log(line),
      budgetScale,
      verbose: values.verbose,
      signal: abort.signal,
    });
    console.log(
      `done: the controller converged, survived a crash, a lost watch (${report.relists} relists) and a status conflict, dead-lettered web-2 and released it on a spec edit; ${report.leftovers} objects left`,
    );
    return report.leftovers === 0 ? 0 : 1;
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n${usage}`);
      return 2;
    }
    if (abort.signal.aborted) return 130;
    throw error;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? `${error.name}: ${error.message}` : error);
    process.exitCode = 1;
  },
);
