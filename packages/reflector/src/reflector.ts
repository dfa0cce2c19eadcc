import { compileSchema, type KubernetesObjectView } from '@reconcile-loop/k8s-types';
import { releaseEvent, type Source, type SourceEvent, type SourceHealth } from '@reconcile-loop/object-store';
import { silentLogger, sleep, systemClock, OptionsError, type BackoffPolicy, type ShardRange } from '@reconcile-loop/primitives';
import { probeListLag } from './list-probe.js';
import { ReflectorCore, type ListReason, type ReflectorStats } from './core.js';
import { listPhase, type ListOutcome } from './list-phase.js';
import { resolveOptions, type ReflectorOptions } from './options.js';
import { watchListPhase, type WatchListOutcome } from './watch-list-phase.js';
import { watchPhase, type WatchOutcome } from './watch-phase.js';
import type { WatchSession } from './watch-session.js';
import { ShardState } from './shard.js';

/**
 * The stream's state machine (kube-rs `watcher` style): what the stream does next, with the data it
 * needs. A failure never sets a flag; it moves the machine to `backoff` with the step to resume at.
 * A watch always resumes from a resourceVersion: the `watch` step carries it (kube-rs's
 * `InitListed { resource_version }` / `Watching { resource_version, stream }`), taken from the
 * outcome of the listing or watch before it, so no step reads it from shared state.
 */
type Step<T extends KubernetesObjectView> =
  /** A LIST (paginated) from which the watch starts; `fallback` when a watch-list for the same listing did not complete. */
  | { readonly kind: 'list'; readonly why: ListReason; readonly fallback?: true }
  /** A watch-list's initial phase: initial events into a temporary map until the initial-events-end bookmark. */
  | { readonly kind: 'watch-list'; readonly why: ListReason }
  /** Watching from `resourceVersion`: on the stream a watch-list synced on (`session`), or a WATCH opened from it. */
  | { readonly kind: 'watch'; readonly resourceVersion: string; readonly session?: WatchSession<T> }
  | { readonly kind: 'backoff'; readonly delayMs: number; readonly next: Step<T> };

/** The watching step from `resourceVersion`. */
const watching = <T extends KubernetesObjectView>(resourceVersion: string): Step<T> => ({ kind: 'watch', resourceVersion });

/**
 * Keeps a local view of one kind in step with the apiserver: LIST, emit a replace, WATCH from the
 * cursor, emit an upsert or delete per frame; reopen the watch from the cursor when it ends, relist
 * when the cursor is rejected, back off when anything fails, tear down a watch that went silent,
 * hold poison objects in a quarantine, and end the stream only for a failure no retry heals.
 * client-go's `Reflector`, as a {@link Source} of source events that reports its {@link health}.
 *
 * One stream at a time: `open` again after the previous stream ended. The backoff, the failure
 * count and the quarantine carry over from one stream to the next.
 */
export class Reflector<T extends KubernetesObjectView> implements Source<T> {
  /** Source name, used in logs. */
  readonly name: string;
  /**
   * The retry policy of this reflector (the `retry` option): its own retries inside the stream, and
   * what the stream driver waits before reopening a stream that ended (object-store's `Source.retry`).
   */
  readonly retry: BackoffPolicy;
  readonly #core: ReflectorCore<T>;
  /** Aborted by {@link reshard} to cut the current phase short; a fresh one per cut. Undefined while no stream runs. */
  #interrupt: AbortController | undefined;
  /**
   * True from {@link reshard} until the next listing's release was yielded: the store still holds
   * objects of the old ranges, which that release removes before the listing of the new ones.
   */
  #releaseDue = false;

  constructor(options: ReflectorOptions<T>) {
    const resolved = resolveOptions(options);
    this.name = resolved.name;
    this.retry = resolved.retry;
    this.#core = new ReflectorCore<T>(resolved, {
      client: options.client,
      schema: compileSchema(options.schema),
      scope: { namespace: options.namespace, labelSelector: options.labelSelector, fieldSelector: options.fieldSelector },
      shard: options.shard === undefined ? undefined : new ShardState(options.shard),
      clock: options.clock ?? systemClock,
      logger: options.logger ?? silentLogger,
      random: options.random ?? Math.random,
    });
  }

  /** The `resourceVersion` the next WATCH starts from: that of the last listing, applied frame or bookmark. */
  get resourceVersion(): string | undefined {
    return this.#core.resourceVersion;
  }

  /** A snapshot of the counters. */
  get stats(): ReflectorStats {
    return this.#core.stats;
  }

  /**
   * How the next listing is fetched: `'watch-list'` (streaming) or `'list'`. Follows `initialList`;
   * `'list'` for good once the server refused watch-list or too many watch-list streams ended
   * early (see {@link watchListOff}).
   */
  get listingMode(): 'watch-list' | 'list' {
    return this.#core.listingVia();
  }

  /** Why this reflector stopped trying watch-list, or undefined while it still may. */
  get watchListOff(): string | undefined {
    return this.#core.watchListOff;
  }

  /** The delay the next failure would wait (the `retry` policy's; a `Retry-After` replaces it). */
  get nextRetryDelayMs(): number {
    return this.#core.nextRetryDelayMs;
  }

  /**
   * What the reflector reports about itself, in its clock's ms: whether the current stream has
   * listed and a watch is open, when it last listed and last heard a frame, the last failure (kube-client's
   * `KubeApiError` carries the apiserver's `Status` and the request) and how many in a row, and
   * the quarantined objects.
   */
  health(): SourceHealth {
    return this.#core.health();
  }

  /**
   * Moves this reflector to new shard `ranges` (the `shard` option's field stays): the LIST or
   * WATCH in flight is cut, a release (object-store's `ReleaseEvent`) removes from the store what
   * the new ranges do not own — not a deletion: the loop forgets those parents instead of
   * reconciling them — and a listing with the new `shardSelector` brings what they newly own, as
   * a relist does (the loop queues it at low priority), with the deletions missed meanwhile. With
   * no stream open, the next stream starts with that release. Throws {@link OptionsError} for a
   * reflector built without `shard` or for malformed ranges (then nothing changes).
   */
  reshard(ranges: readonly ShardRange[]): void {
    const shard = this.#core.shard;
    if (shard === undefined) throw new OptionsError('Reflector', 'reshard() needs a reflector built with the shard option');
    shard.reshard(ranges);
    this.#releaseDue = true;
    this.#core.logger.info(this.#core.fields({ selector: shard.selector }), 'shard ranges changed; relisting');
    this.#interrupt?.abort();
  }

  /**
   * Opens a stream: a replace (the listing), then an upsert / delete per watch frame, with a
   * replace after every relist. Runs until `signal` aborts (the stream then ends without error).
   * Transient failures are retried inside the stream and show only in {@link health} and the logs;
   * the stream throws only a failure marked `permanent: true` (`ListRejectedError` for a first LIST
   * answered 400/422, `KubeClientConfigError` for a client that cannot build a request).
   */
  open(signal: AbortSignal): AsyncIterable<SourceEvent<T>> {
    return this.#run(signal);
  }

  async *#run(signal: AbortSignal): AsyncGenerator<SourceEvent<T>, void, undefined> {
    const core = this.#core;
    // A new stream starts with a listing (its consumer expects a replace first), but keeps the
    // backoff level: if the previous stream failed, this one does not get a fresh first delay.
    core.streamOpened();
    /** The listing step for `why`: a watch-list or a LIST, decided when the listing is due. */
    const listing = (why: ListReason): Step<T> => ({ kind: core.listingVia(), why });
    let step: Step<T> = listing('initial');
    // The list-lag probe runs beside this stream and ends with it (it never changes the stream).
    const probe = new AbortController();
    const stopProbe = (): void => probe.abort();
    signal.addEventListener('abort', stopProbe, { once: true });
    const probeEveryMs = core.options.listLagProbeIntervalMs;
    if (probeEveryMs !== undefined) void probeListLag(core, probeEveryMs, probe.signal);
    // Each phase runs on `phase`: the stream's signal, or a reshard's cut, which restarts the listing.
    let interrupt = new AbortController();
    this.#interrupt = interrupt;
    let phase = AbortSignal.any([signal, interrupt.signal]);
    const cut = (): boolean => {
      if (signal.aborted || !interrupt.signal.aborted) return false;
      interrupt = new AbortController();
      this.#interrupt = interrupt;
      phase = AbortSignal.any([signal, interrupt.signal]);
      step = listing('reshard');
      return true;
    };
    try {
      while (!signal.aborted) {
        if (interrupt.signal.aborted) {
          cut(); // a reshard while an event was being consumed
          continue;
        }
        if ((step.kind === 'list' || step.kind === 'watch-list') && this.#releaseDue) {
          // Before the listing of new ranges: what they do not own leaves the store as released, not deleted.
          this.#releaseDue = false;
          const shard = core.shard!;
          yield releaseEvent<T>((object) => shard.owns(object));
        }
        switch (step.kind) {
          case 'list': {
            const outcome: ListOutcome = yield* listPhase(core, phase, step.why, step.fallback === true);
            if (outcome.kind === 'stopped') {
              if (cut()) break;
              return;
            }
            step =
              outcome.kind === 'failed'
                ? { kind: 'backoff', delayMs: outcome.delayMs, next: listing(step.why) }
                : watching(outcome.resourceVersion);
            break;
          }
          case 'watch-list': {
            const outcome: WatchListOutcome<T> = yield* watchListPhase(core, phase, step.why);
            if (outcome.kind === 'stopped') {
              if (cut()) break;
              return;
            }
            // Incomplete: this listing falls back to a LIST at once (no wait: the LIST is another request).
            step =
              outcome.kind === 'synced'
                ? { kind: 'watch', resourceVersion: outcome.resourceVersion, session: outcome.session }
                : { kind: 'list', why: step.why, fallback: true };
            break;
          }
          case 'watch': {
            const outcome: WatchOutcome = yield* watchPhase(core, phase, step.resourceVersion, step.session);
            switch (outcome.kind) {
              case 'aborted':
                if (cut()) break;
                return;
              case 'ended':
                step = watching(outcome.resourceVersion); // reopen where it ended, no LIST
                break;
              case 'retry':
                step = { kind: 'backoff', delayMs: outcome.delayMs, next: watching(outcome.resourceVersion) };
                break;
              case 'relist':
                step = { kind: 'backoff', delayMs: outcome.delayMs, next: listing('relist') };
                break;
              case 'heal':
                step = listing('heal');
                break;
            }
            break;
          }
          case 'backoff': {
            try {
              await sleep(core.clock, step.delayMs, phase);
            } catch {
              if (cut()) break;
              return; // only the signal rejects sleep
            }
            step = step.next;
            break;
          }
        }
      }
    } finally {
      signal.removeEventListener('abort', stopProbe);
      probe.abort();
      if (this.#interrupt === interrupt) this.#interrupt = undefined;
      core.streamEnded();
    }
  }
}
