/**
 * controller-runtime's manager for ReconcileLoops: one process, one `KubeClient`, one shared watch per
 * kind and selector, one leader election (or none), one health endpoint composed from every
 * controller, source and the elector, `/metrics` on the same port, SIGTERM/SIGINT with one bounded
 * shutdown, and an exit code.
 *
 * Shutdown order (one budget, `shutdown.timeoutMs`): the elector is told to stop (its term ends, so
 * every in-flight reconcile's signal aborts) and every controller stops at once; the Lease is
 * released once the controllers' work settled (the elector waits for it: a standby must not lead
 * while this replica still writes); then the Events still pending are written for the time left;
 * then the shared watches and the probe server close. Whatever the deadline leaves is named in a
 * `ShutdownTimeoutError` and the exit code is 1.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import type { KubernetesObjectView } from '@reconcile-loop/k8s-types';
import { EventRecorder, KubeClient, type EventRecorderOptions } from '@reconcile-loop/kube-client';
import { LeaderElector, LeaseLock } from '@reconcile-loop/leader-election';
import {
  healthHandler,
  isLoopStopped,
  ReconcileLoop,
  type Key,
  type LoopHealth,
  type ReconcileLoopOptions,
  type Source,
  type StopReport,
} from '@reconcile-loop/loop';
import { OptionsError, silentLogger, systemClock, type Clock, type Logger } from '@reconcile-loop/primitives';
import { kubeReflector } from '@reconcile-loop/reflector';
import { ManagerAlreadyStartedError, ShutdownTimeoutError } from './errors.js';
import { checkManagerOptions, type ManagerOptions, type ManagerSourceOptions } from './options.js';
import { shareSource, type SharedSource } from './shared-source.js';

type Verdict = LoopHealth<Key>['ready'];
type Check = Verdict['checks'][number];

/** How `run()` ended: the process exit code and why it is not 0. */
export interface ManagerExit {
  /** 0 after a clean stop; 1 after any failure, a stop before every controller synced, or a shutdown past its grace. */
  readonly code: 0 | 1;
  /**
   * Why the code is 1 (undefined for 0): a controller's failed start (its `SyncTimeoutError`, a
   * permanent source error) or failure after start, the loop's `LoopStoppedError` when the stop came
   * before every controller synced, a probe server that could not listen, or a `ShutdownTimeoutError`.
   */
  readonly error: unknown;
  /** The name of the controller the error came from, when it came from one. */
  readonly controller: string | undefined;
}

interface Controller {
  readonly name: string;
  readonly loop: ReconcileLoop<never, Key, never>;
}

interface SharedEntry {
  readonly shared: SharedSource<KubernetesObjectView>;
  readonly options: Readonly<Record<string, unknown>>;
  readonly describe: string;
}

/** The options of one shared watch that must match between two `source()` calls sharing it. */
const IDENTITY = new Set(['resource', 'schema', 'namespace', 'labelSelector', 'fieldSelector', 'name']);

const schemaIds = new WeakMap<object, number>();
let nextSchemaId = 0;
function schemaId(schema: object): number {
  let id = schemaIds.get(schema);
  if (id === undefined) schemaIds.set(schema, (id = nextSchemaId++));
  return id;
}

/** Runs several controllers in one process; see the package README. */
export class Manager {
  /** The one client: every shared source's LIST and WATCH, your writes, the Lease (its own lane) and Events (their own lane). */
  readonly client: KubeClient;
  /** The elector when `leaderElection` was given; every controller's `leadership.gate`. */
  readonly elector: LeaderElector | undefined;
  readonly #options: ManagerOptions;
  readonly #graceMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #controllers: Controller[] = [];
  readonly #sources = new Map<string, SharedEntry>();
  readonly #recorders: EventRecorder[] = [];
  readonly #stopping = new AbortController();
  #state: 'idle' | 'running' | 'stopped' = 'idle';
  #server: Server | undefined;
  #probesUrl: string | undefined;
  #failure: { error: unknown; controller: string | undefined } | undefined;

  constructor(options: ManagerOptions) {
    this.#graceMs = checkManagerOptions(options).shutdownTimeoutMs;
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.client = options.client ?? new KubeClient({ kubeConfig: options.kubeConfig! });
    const election = options.leaderElection;
    this.elector =
      election === undefined
        ? undefined
        : new LeaderElector({
            // Its own limiter lane (LeaseLock's default): reconcile writes queued on `client` never delay a renewal.
            lock: new LeaseLock({
              client: this.client,
              namespace: election.namespace,
              name: election.name,
              identity: election.identity ?? `${hostname()}_${randomUUID()}`,
            }),
            leaseDurationMs: election.leaseDurationMs,
            renewDeadlineMs: election.renewDeadlineMs,
            retryPeriodMs: election.retryPeriodMs,
            clock: options.clock,
            logger: this.#logger,
          });
  }

  /** The probe server's base URL once `run()` listens (`http://host:port`); undefined without `probes`. */
  get probesUrl(): string | undefined {
    return this.#probesUrl;
  }

  /** `idle` until `run()`, `running` until its shutdown ends, then `stopped`. */
  get state(): 'idle' | 'running' | 'stopped' {
    return this.#state;
  }

  /**
   * A source of `resource` for one controller, shared: every `source()` call with the same resource,
   * schema, namespace and selectors reads ONE reflector (one LIST, one WATCH), opened when the first
   * controller's stream opens and closed when the last one's closes. Each controller keeps its own
   * store over the same objects (see `shareSource`). The reflector options other than those must be
   * the same in every call sharing it (one watch has one set of options); `name` is per call (the
   * source's name in that controller's health and metrics; default the resource's plural).
   */
  source<T extends KubernetesObjectView>(options: ManagerSourceOptions<T>): Source<T> {
    this.#assertIdle('source()');
    if (options === null || typeof options !== 'object' || options.resource === undefined || options.schema === undefined)
      throw new OptionsError('Manager', 'source() needs a resource and a schema');
    const { resource, schema } = options;
    const describe =
      `${resource.group === '' ? '' : `${resource.group}/`}${resource.version}/${resource.plural}` +
      `${options.namespace === undefined ? '' : ` in ${options.namespace}`}` +
      `${options.labelSelector ? ` (${options.labelSelector})` : ''}${options.fieldSelector ? ` [${options.fieldSelector}]` : ''}`;
    const key = JSON.stringify([
      resource.group,
      resource.version,
      resource.plural,
      options.namespace ?? '',
      options.labelSelector ?? '',
      options.fieldSelector ?? '',
      schemaId(schema),
    ]);
    const name = options.name ?? resource.plural;
    let entry = this.#sources.get(key);
    if (entry === undefined) {
      const reflector = kubeReflector<T>({
        ...options,
        name,
        kubeClient: this.client,
        clock: options.clock ?? this.#options.clock,
        logger: options.logger ?? this.#options.logger,
      });
      entry = { shared: shareSource(reflector) as unknown as SharedSource<KubernetesObjectView>, options, describe };
      this.#sources.set(key, entry);
    } else {
      const first = entry.options;
      for (const field of new Set([...Object.keys(first), ...Object.keys(options)])) {
        if (IDENTITY.has(field)) continue;
        if ((first as Record<string, unknown>)[field] !== (options as Record<string, unknown>)[field])
          throw new OptionsError(
            'Manager',
            `source ${describe}: ${field} differs from the first source() of this resource and selector; one shared watch has one set of options`,
          );
      }
    }
    return (entry.shared as unknown as SharedSource<T>).subscribe(name);
  }

  /**
   * Builds a controller run by this manager: a `ReconcileLoop` of these options, with the manager's
   * elector as `leadership.gate`, its clock and logger unless given, and its failures ending the
   * manager (`run()` resolves with code 1). The controller's name (`controller.name`, default the
   * primary source's name) must be unique in the manager: it prefixes the controller's health checks.
   */
  controller<T, P extends Key, S = Record<never, never>>(options: ReconcileLoopOptions<T, P, S>): ReconcileLoop<T, P, S> {
    this.#assertIdle('controller()');
    const name = options?.controller?.name ?? options?.source?.name;
    if (typeof name !== 'string' || name === '') throw new OptionsError('Manager', 'controller() needs a source (and a name)');
    if (this.#controllers.some((c) => c.name === name))
      throw new OptionsError('Manager', `a controller named ${name} exists already; give controller.name`);
    if (this.elector !== undefined && options.leadership !== undefined)
      throw new OptionsError('Manager', `controller ${name}: leadership is the manager's (leaderElection); do not give it`);
    const userOnError = options.onError;
    const loop = new ReconcileLoop<T, P, S>({
      ...options,
      ...(this.elector !== undefined && { leadership: { gate: this.elector } }),
      clock: options.clock ?? this.#options.clock,
      logger: options.logger ?? this.#options.logger,
      onError: (error) => {
        userOnError?.(error);
        this.#fail(error, name);
      },
    });
    this.#controllers.push({ name, loop: loop as unknown as ReconcileLoop<never, Key, never> });
    return loop;
  }

  /**
   * An `events.k8s.io/v1` recorder on the client's `events` lane (Events never spend the writes' rate
   * limit), closed by the shutdown within its budget, after the Lease release.
   */
  events(options: Omit<EventRecorderOptions, 'client'>): EventRecorder {
    this.#assertIdle('events()');
    const recorder = new EventRecorder({
      logger: this.#options.logger,
      ...options,
      client: this.client.withLane('events'),
    });
    this.#recorders.push(recorder);
    return recorder;
  }

  /**
   * Readiness and liveness of the whole process: every controller's checks (each prefixed with its
   * name, so `/readyz/<controller>/source:pods` asks one), which cover its sources, and one `leader`
   * check with the elector: ready says `leading` or `standby` (a standby is ready: a rolling update
   * waits for it), alive is client-go's `HealthzAdaptor` (a leader that stopped renewing).
   */
  health(): { readonly ready: Verdict; readonly alive: Verdict } {
    const ready: Check[] = [];
    const alive: Check[] = [];
    for (const { name, loop } of this.#controllers) {
      const health = loop.health();
      // The elector's state is one check of the manager's, not one per controller.
      for (const check of health.ready.checks)
        if (check.name !== 'leader') ready.push({ ...check, name: `${name}/${check.name}` });
      for (const check of health.alive.checks) alive.push({ ...check, name: `${name}/${check.name}` });
    }
    const elector = this.elector;
    if (elector !== undefined) {
      const leading = elector.isLeader();
      const holder = elector.leader;
      ready.push({
        name: 'leader',
        ok: true,
        reason: leading
          ? `leading (${elector.identity})`
          : `standby: caches warm, waiting for leadership${holder ? ` (held by ${holder})` : ''}`,
      });
      const check = elector.check();
      alive.push(check.healthy ? { name: 'leader', ok: true } : { name: 'leader', ok: false, reason: check.reason });
    }
    return { ready: verdict(ready), alive: verdict(alive) };
  }

  /** Asks `run()` to shut down (as SIGTERM does); idempotent. */
  stop(): void {
    this.#stopping.abort();
  }

  /**
   * Runs every controller until SIGTERM/SIGINT (or `stop()`), or until one fails, then shuts down
   * within `shutdown.timeoutMs`. Resolves with the exit code (never rejects for a controller's
   * failure: that is `error`). Keeps the process alive while pending. Runs once.
   */
  async run(): Promise<ManagerExit> {
    if (this.#state !== 'idle') throw new ManagerAlreadyStartedError('run()');
    this.#state = 'running';
    const keepAlive = setInterval(() => {}, 1 << 30);
    const signals = this.#options.signals === false ? [] : (this.#options.signals ?? ['SIGTERM', 'SIGINT']);
    // `on`, not `once`: a signal to the process group can arrive twice (directly and relayed by a
    // wrapper such as tsx); a repeat must not hit Node's default handler in the middle of the shutdown.
    const onSignal = (signal: NodeJS.Signals): void => {
      this.#logger.info({ signal }, 'signal received: shutting down');
      this.stop();
    };
    for (const signal of signals) process.on(signal, onSignal);
    const electing = new AbortController();
    let election: Promise<void> | undefined;
    try {
      if (this.#options.probes !== undefined)
        await this.#listen(this.#options.probes.port, this.#options.probes.host ?? '0.0.0.0');
      if (!this.#stopping.signal.aborted) {
        election = this.elector?.run(electing.signal).catch((error: unknown) => this.#fail(error, undefined));
        for (const { name, loop } of this.#controllers) {
          loop.start().catch((error: unknown) => {
            // Stopped before it synced (a signal, or another controller's failure): the run did not
            // do its job, but this is not a failure of its own; the first cause is kept.
            if (isLoopStopped(error) && this.#stopping.signal.aborted) this.#failure ??= { error, controller: name };
            else this.#fail(error, name);
          });
        }
        if (!this.#stopping.signal.aborted)
          await new Promise<void>((resolve) => this.#stopping.signal.addEventListener('abort', () => resolve(), { once: true }));
      }
      await this.#shutdown(electing, election);
    } catch (error) {
      this.#failure ??= { error, controller: undefined };
      await this.#shutdown(electing, election).catch(() => undefined);
    } finally {
      for (const signal of signals) process.off(signal, onSignal);
      clearInterval(keepAlive);
      this.#state = 'stopped';
    }
    const failure = this.#failure;
    return failure === undefined
      ? { code: 0, error: undefined, controller: undefined }
      : { code: 1, error: failure.error, controller: failure.controller };
  }

  #fail(error: unknown, controller: string | undefined): void {
    if (this.#failure === undefined || (this.#stopping.signal.aborted && isLoopStopped(this.#failure.error)))
      this.#failure = { error, controller };
    this.#logger.error({ err: error, controller }, 'stopping: a controller failed');
    this.#stopping.abort();
  }

  #assertIdle(what: string): void {
    if (this.#state !== 'idle') throw new ManagerAlreadyStartedError(what);
  }

  async #listen(port: number, host: string): Promise<void> {
    const health = healthHandler(this);
    const metrics = this.#options.metrics;
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (metrics !== undefined && path === '/metrics') {
        void Promise.resolve(metrics(req, res)).catch((error: unknown) => {
          res.statusCode = 500;
          res.end(`metrics failed: ${error instanceof Error ? error.message : String(error)}\n`);
        });
        return;
      }
      health(req, res);
    });
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    this.#probesUrl = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}`;
  }

  async #shutdown(electing: AbortController, election: Promise<void> | undefined): Promise<void> {
    const deadline = this.#clock.now() + this.#graceMs;
    const left = (): number => Math.max(0, deadline - this.#clock.now());
    const pending: string[] = [];
    // The term ends first, so every reconcile's signal aborts (LeadershipEndedError) while the loops stop.
    electing.abort();
    const reports = await Promise.all(this.#controllers.map(({ loop }) => loop.stop({ graceMs: left() })));
    reports.forEach((report: StopReport<Key>, i) => {
      const { name } = this.#controllers[i]!;
      for (const key of report.abandoned) pending.push(`${name}: reconcile of ${String(key)}`);
      for (const source of report.abandonedSources) pending.push(`${name}: source ${source}`);
    });
    // The Lease is released by the elector once its term's work settled; bounded by what is left.
    if (election !== undefined && !(await this.#within(election, left()))) pending.push('lease release');
    const closing = this.#recorders.map((recorder) => recorder.close({ timeoutMs: left() }));
    if (!(await this.#within(Promise.all(closing), left()))) pending.push('events');
    // Every controller stopped, so every shared reflector was aborted; wait for each to close.
    const watches = await Promise.all(
      [...this.#sources.values()].map(async ({ shared, describe }) =>
        (await this.#within(shared.closed(), left())) ? [] : [describe],
      ),
    );
    for (const describe of watches.flat()) pending.push(`watch of ${describe}`);
    const server = this.#server;
    if (server !== undefined) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    if (pending.length > 0) {
      const error = new ShutdownTimeoutError(this.#graceMs, pending);
      this.#logger.warn({ pending }, error.message);
      this.#failure ??= { error, controller: undefined };
    }
  }

  /** True when `promise` settled within `ms` (on the manager's clock). */
  async #within(promise: Promise<unknown>, ms: number): Promise<boolean> {
    let timer: unknown;
    const over = new Promise<boolean>((resolve) => (timer = this.#clock.setTimeout(() => resolve(false), ms)));
    const settled = promise.then(
      () => true,
      () => true,
    );
    const result = await Promise.race([settled, over]);
    this.#clock.clearTimeout(timer);
    return result;
  }
}

function verdict(checks: Check[]): Verdict {
  return { ok: checks.every((c) => c.ok), checks };
}
