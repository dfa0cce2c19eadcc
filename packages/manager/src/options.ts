/** The manager's options, their defaults and their validation (every bad value is an `OptionsError`). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KubernetesObjectView } from '@reconcile-loop/k8s-types';
import type { KubeClient, KubeConfigAuth } from '@reconcile-loop/kube-client';
import { OptionsError, type Clock, type Logger } from '@reconcile-loop/primitives';
import type { KubeReflectorOptions } from '@reconcile-loop/reflector';

/** controller-runtime's `GracefulShutdownTimeout` default: the whole shutdown gets 30 s. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000;

/** A `/metrics` handler over node:http; its result is ignored (a promise is awaited), so `metricsHandler(registry)`, typed `=> unknown`, fits. */
export type MetricsHandler = (req: IncomingMessage, res: ServerResponse) => unknown;

/** How to build a {@link Manager}. */
export interface ManagerOptions {
  /** A client-node `KubeConfig` (1.x or 2.x); the manager builds its one `KubeClient` from it. Give this or `client`. */
  readonly kubeConfig?: KubeConfigAuth | undefined;
  /** The one `KubeClient` every source, write, Lease and Event goes through (e.g. built with `onRateLimitWait`). Give this or `kubeConfig`. */
  readonly client?: KubeClient | undefined;
  /**
   * One leader election for every controller (controller-runtime's `LeaderElection`): every replica
   * syncs its caches, only the holder of the Lease `namespace/name` reconciles. Default: none (always leads).
   */
  readonly leaderElection?:
    | {
        readonly namespace: string;
        readonly name: string;
        /** Unique per process instance. Default `<hostname>_<random UUID>`. */
        readonly identity?: string | undefined;
        /** client-go's 15 000 / 10 000 / 2 000 by default. */
        readonly leaseDurationMs?: number | undefined;
        readonly renewDeadlineMs?: number | undefined;
        readonly retryPeriodMs?: number | undefined;
      }
    | undefined;
  /**
   * Serve `/healthz` (`/livez`) and `/readyz` on this port (0: any free port; `manager.probesUrl`
   * says which), with `/metrics` beside them when `metrics` is given. Default: no server.
   */
  readonly probes?:
    | {
        readonly port: number;
        /** Default `0.0.0.0`: a pod's kubelet probes its IP. Reasons are withheld unless `?verbose`. */
        readonly host?: string | undefined;
      }
    | undefined;
  /**
   * The `/metrics` handler, e.g. `metricsHandler(registry)` of `@reconcile-loop/metrics`: served on the
   * probes' port. The manager imports no metrics library. Default: none (`/metrics` is 404).
   */
  readonly metrics?: MetricsHandler | undefined;
  /** The shutdown's whole budget after SIGTERM/SIGINT or `stop()`. */
  readonly shutdown?:
    | {
        /**
         * Controllers stop, then the Lease is released, then pending Events are written, all within
         * this. Default 30 000 (controller-runtime's `GracefulShutdownTimeout`).
         */
        readonly timeoutMs?: number | undefined;
      }
    | undefined;
  /** The signals that stop the manager while `run()` is pending. Default `['SIGTERM', 'SIGINT']`; `false` installs none. */
  readonly signals?: readonly NodeJS.Signals[] | false | undefined;
  /** Given to every controller, source, the elector and the recorders unless they name their own. Default: silent. */
  readonly logger?: Logger | undefined;
  /** Given to every controller, source and the elector unless they name their own. Default `systemClock`. */
  readonly clock?: Clock | undefined;
}

/** A shared source: a reflector's options without the client (the manager's) — `resource` and `schema` required. */
export type ManagerSourceOptions<T extends KubernetesObjectView> = Omit<KubeReflectorOptions<T>, 'kubeConfig' | 'kubeClient'>;

const KNOWN = new Set(['kubeConfig', 'client', 'leaderElection', 'probes', 'metrics', 'shutdown', 'signals', 'logger', 'clock']);

function group(name: string, value: unknown, known: readonly string[]): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object') throw new OptionsError('Manager', `${name} must be an object`);
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new OptionsError('Manager', `${name}.${key} is not an option (known: ${known.join(', ')})`);
  }
  return value as Record<string, unknown>;
}

/** Checks `options`; returns the shutdown budget. */
export function checkManagerOptions(options: ManagerOptions): { shutdownTimeoutMs: number } {
  if (options === null || typeof options !== 'object') throw new OptionsError('Manager', 'options are required');
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw new OptionsError('Manager', `${key} is not an option (known: ${[...KNOWN].join(', ')})`);
  }
  if ((options.kubeConfig === undefined) === (options.client === undefined))
    throw new OptionsError('Manager', 'give exactly one of kubeConfig and client');
  const election = group('leaderElection', options.leaderElection, [
    'namespace',
    'name',
    'identity',
    'leaseDurationMs',
    'renewDeadlineMs',
    'retryPeriodMs',
  ]);
  if (options.leaderElection !== undefined) {
    for (const key of ['namespace', 'name'] as const) {
      if (typeof election[key] !== 'string' || election[key] === '')
        throw new OptionsError('Manager', `leaderElection.${key} must be a non-empty string`);
    }
  }
  const probes = group('probes', options.probes, ['port', 'host']);
  if (options.probes !== undefined) {
    const port = probes['port'];
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65_535)
      throw new OptionsError('Manager', `probes.port must be a port number (0 for any free port), got ${String(port)}`);
  }
  if (options.metrics !== undefined && typeof options.metrics !== 'function')
    throw new OptionsError('Manager', 'metrics must be a request handler, e.g. metricsHandler(registry)');
  if (options.metrics !== undefined && options.probes === undefined)
    throw new OptionsError('Manager', 'metrics are served on the probes port: give probes too');
  const shutdown = group('shutdown', options.shutdown, ['timeoutMs']);
  const timeoutMs = shutdown['timeoutMs'] ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
  if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs < 0)
    throw new OptionsError('Manager', `shutdown.timeoutMs must be a duration in ms (>= 0), got ${String(timeoutMs)}`);
  if (options.signals !== undefined && options.signals !== false && !Array.isArray(options.signals))
    throw new OptionsError('Manager', 'signals must be a list of signal names, or false');
  return { shutdownTimeoutMs: timeoutMs };
}
