/**
 * The pool tracker demo. Without a cluster it plays an embedded, churning pool of engine and
 * trainer cells for `--duration` seconds; with `KUBECONFIG` (or `--kubeconfig`) it tracks the pods of
 * a real cluster until Ctrl-C. Either way every reconcile prints its pool's view when it changes.
 *
 *   pnpm demo                      # simulated, 10 s
 *   pnpm demo --duration 4         # simulated, cut short
 *   pnpm demo --kubeconfig ~/.kube/config --namespace ml --selector pool
 */
import { parseArgs } from 'node:util';
import type { Logger } from '@reconcile-loop/loop';
import { openClusterSource } from './cluster.js';
import { createSimulation } from './simulation.js';
import { createPoolTracker } from './tracker.js';

const usage = `usage: pnpm demo [--duration <seconds>] [--simulate]
                 [--kubeconfig <path>] [--namespace <ns>] [--selector <labels>] [--pool-label <label>] [--verbose]`;

function consoleLogger(verbose: boolean): Logger {
  const line =
    (level: string) =>
    (fields: Record<string, unknown>, message: string): void => {
      const err = fields['err'];
      const detail = err instanceof Error ? `: ${err.message}` : '';
      console.log(`          ${level} ${message}${detail}`);
    };
  const quiet = (): void => {};
  return { debug: verbose ? line('.') : quiet, info: verbose ? line('i') : quiet, warn: line('!'), error: line('!') };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string' },
      simulate: { type: 'boolean', default: false },
      kubeconfig: { type: 'string' },
      namespace: { type: 'string', default: 'default' },
      selector: { type: 'string' },
      'pool-label': { type: 'string', default: 'pool' },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const durationS = values.duration === undefined ? undefined : Number(values.duration);
  if (durationS !== undefined && !(Number.isFinite(durationS) && durationS > 0)) {
    console.error(`--duration must be a positive number of seconds\n${usage}`);
    return 2;
  }
  const logger = consoleLogger(values.verbose);
  const print = (line: string): void => console.log(line);

  // Ctrl-C stops the tracker cleanly. A ref'd interval keeps the process alive meanwhile: the
  // loop's own timers are unref'd by design.
  const abort = new AbortController();
  const onSignal = (): void => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const keepAlive = setInterval(() => {}, 1 << 30);
  try {
    const kubeconfig = values.kubeconfig ?? process.env['KUBECONFIG'];
    if (!values.simulate && kubeconfig) {
      const poolLabel = values['pool-label'];
      const selector = values.selector ?? poolLabel;
      print(`tracking pods in namespace ${values.namespace} matching "${selector}" (Ctrl-C to stop)`);
      const source = await openClusterSource({
        ...(values.kubeconfig !== undefined && { kubeconfig: values.kubeconfig }),
        namespace: values.namespace,
        selector,
        logger,
      });
      const tracker = createPoolTracker({ source, poolLabel, print, logger, syncTimeoutMs: 30_000 });
      await using loop = tracker.loop;
      await loop.start();
      await new Promise<void>((resolve) => {
        if (abort.signal.aborted) resolve();
        abort.signal.addEventListener('abort', () => resolve(), { once: true });
        if (durationS !== undefined) setTimeout(resolve, durationS * 1000).unref();
      });
    } else {
      const durationMs = (durationS ?? 10) * 1000;
      print(`simulated pool of engine and trainer cells for ${durationMs / 1000} s (no KUBECONFIG)`);
      const simulation = createSimulation({ durationMs, print, logger, signal: abort.signal });
      await simulation.run();
      const pools = [...simulation.tracker.views.values()].map((v) => `${v.pool} (${v.ready}/${v.cells.length} ready)`);
      print(`stopped cleanly; final pools: ${pools.join(', ') || 'none'}`);
    }
    return 0;
  } finally {
    clearInterval(keepAlive);
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
