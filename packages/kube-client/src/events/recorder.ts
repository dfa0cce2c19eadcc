import { hostname } from 'node:os';
import {
  backoffDelay,
  checkBackoffPolicy,
  OptionsError,
  type BackoffPolicy,
  type Clock,
  type Logger,
} from '@reconcile-loop/primitives';
import type { KubeClient } from '../client.js';
import { isAlreadyExists, isKubeApiError, isNotFound, KubeRequestTimeoutError, KubeTransportError } from '../errors.js';
import { TokenBucketRateLimiter } from '../rate-limiter.js';
import type { ResourceClient } from '../resource.js';
import type { KubeObject, WriteObject } from '../types.js';
import {
  COMBINED_PREFIX,
  DEFAULT_AGGREGATE_INTERVAL_MS,
  DEFAULT_AGGREGATE_MAX_EVENTS,
  MAX_CORRELATOR_ENTRIES,
  similarKey,
  SimilarEventAggregator,
} from './aggregator.js';
import { checkEvent, eventKey, makeEvent, microTime, type EventBody, type EventInput, type ObjectReference } from './event.js';

/** Options of {@link EventRecorder}; the defaults are client-go's `tools/events` and `tools/record` constants. */
export interface EventRecorderOptions {
  readonly client: KubeClient;
  /** e.g. `example.io/cellset-controller`. */
  readonly reportingController: string;
  /**
   * Names this replica. Default {@link defaultReportingInstance}: `POD_NAME` (or the hostname)
   * plus the process id, so two replicas differ even on one host.
   */
  readonly reportingInstance?: string | undefined;
  /** Drives the windows, the sweep and retries. Default the client's clock. */
  readonly clock?: Clock | undefined;
  /** Wall time in epoch ms, for `eventTime` / `lastObservedTime`. Default `Date.now`. */
  readonly wallClock?: (() => number) | undefined;
  readonly logger?: Logger | undefined;
  /** A series ends after this long without a repeat; its final count is written (client-go `finishTime`, 6 min). */
  readonly finishMs?: number | undefined;
  /** A live series' count is written at least this often (client-go `refreshTime`, 30 min). */
  readonly refreshMs?: number | undefined;
  /** Distinct similar events (same regarding object, type and reason) before they are combined into one (client-go `defaultAggregateMaxEvents`, 10). */
  readonly aggregateMaxEvents?: number | undefined;
  /** A similarity group's count restarts after this long without one (client-go `defaultAggregateIntervalInSeconds`, 10 min). */
  readonly aggregateIntervalMs?: number | undefined;
  /** New Events per source and regarding object in a burst (client-go spam filter `defaultSpamBurst`, 25). */
  readonly spamBurst?: number | undefined;
  /** New Events per regarding object per second after the burst (client-go `defaultSpamQPS`, 1/300). */
  readonly spamQps?: number | undefined;
  /** Writes waiting at most (client-go `maxQueuedEvents`, 1000); more are dropped and counted. */
  readonly maxQueued?: number | undefined;
  /** Tries per write for transient failures (client-go `maxTriesPerEvent`, 12). */
  readonly maxTries?: number | undefined;
  /** The wait between tries (primitives' `BackoffPolicy`). Default client-go's: 10 s, constant, jittered by up to 25%. */
  readonly retry?: BackoffPolicy | undefined;
  readonly random?: (() => number) | undefined;
  /**
   * How long `close()` may spend writing what is still pending before it drops the rest (with one
   * log line naming how many). Default {@link DEFAULT_CLOSE_TIMEOUT_MS}; `Infinity` waits for all.
   */
  readonly closeTimeoutMs?: number | undefined;
}

/** Options of one {@link EventRecorder.close} call. */
export interface EventCloseOptions {
  /** Overrides `closeTimeoutMs` for this close (only the first close's value counts). */
  readonly timeoutMs?: number | undefined;
}

/**
 * `close()`'s default budget. A pod's default termination grace is 30 s and the loop's stop may
 * take part of it first, so the flush gets 5 s: at client-go's 5 writes/s that is 25 to 35
 * writes, and what is left is dropped (controller-runtime's broadcaster drops what it cannot send).
 */
export const DEFAULT_CLOSE_TIMEOUT_MS = 5_000;

/**
 * `{POD_NAME or hostname}_{pid}` (at most 128 characters): the pod name tells replicas on
 * different pods apart (every container's main process may be pid 1), the pid two processes on one
 * host (a laptop running two replicas). A restarted process on the same pod reuses it, as it is
 * the same replica.
 */
export function defaultReportingInstance(env: NodeJS.ProcessEnv = process.env, pid: number = process.pid): string {
  const podName = env['POD_NAME'];
  return `${podName !== undefined && podName !== '' ? podName : hostname()}_${pid}`.slice(0, 128);
}

/** What happened to recorded events, for tests and metrics. */
export interface EventRecorderStats {
  recorded: number;
  created: number;
  /** Series writes (count and lastObservedTime). */
  patched: number;
  /** Repeats folded into an existing Event's series. */
  aggregated: number;
  /** Events replaced by their similarity group's combined Event (`(combined from similar events): …`). */
  combined: number;
  droppedSpam: number;
  droppedQueueFull: number;
  /** Refused by the server with a non-transient status (4xx). */
  droppedRejected: number;
  droppedRetriesExhausted: number;
  droppedClosed: number;
  /** Pending when `close()` reached its deadline: never written. */
  droppedAtDeadline: number;
}

interface Cached {
  readonly event: EventBody;
  lastSeen: number;
  lastWritten: number;
  /** The series changed since it was last written. */
  dirty: boolean;
}

interface Job {
  readonly event: EventBody;
  readonly series: boolean;
  /** The cache entry a series write is for: the write carries its newest count, so it is clean again. */
  readonly cached?: Cached | undefined;
  tries: number;
}

/** client-go's recorder sleeps 10 s between tries, jittered by up to 25%. */
const DEFAULT_EVENT_RETRY: BackoffPolicy = Object.freeze({ initialMs: 10_000, maxMs: 10_000, factor: 1, jitter: 0.25 });

const eventsResource = { group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event' };

function closeTimeout(name: string, value: number): number {
  if (!(value >= 0)) throw new OptionsError('EventRecorder', `${name} must be a number >= 0 or Infinity, got ${String(value)}`);
  return value;
}

function transient(error: unknown): boolean {
  // No answer, or a 5xx/429: worth another try. A 4xx means the event itself is wrong (client-go
  // drops it), as does an answer that breaks the protocol.
  if (error instanceof KubeTransportError || error instanceof KubeRequestTimeoutError) return true;
  return isKubeApiError(error) && (error.statusCode >= 500 || error.statusCode === 429);
}

/**
 * Records `events.k8s.io/v1` Events with client-go's correlation. Similar events (same source,
 * regarding object, type and reason; `tools/record`'s `EventAggregator`): from the 10th distinct
 * one within a 10 min rolling window on, each new one is replaced by the group's one combined
 * Event, noted `(combined from similar events): <note>`. Exact repeats (same regarding, related,
 * reason, action, type, note and controller; `tools/events` series) while a series is live only
 * count: the first repeat writes `series.count: 2` at once, later ones accumulate until the
 * periodic refresh (30 min) or the end of the series (6 min quiet), when the count is written. New
 * Events pass a token bucket per source and regarding object (client-go's
 * `EventSourceObjectSpamFilter`: burst 25, then one per 5 min) and a bounded queue; every per-key
 * record is bounded (4096, oldest first), so a hot loop cannot flood the apiserver or the heap.
 * `event()` never throws for a transport failure and never waits: writes happen in the background,
 * one at a time; everything dropped is counted in {@link EventRecorder.stats}.
 */
export class EventRecorder {
  readonly stats: EventRecorderStats = {
    recorded: 0,
    created: 0,
    patched: 0,
    aggregated: 0,
    combined: 0,
    droppedSpam: 0,
    droppedQueueFull: 0,
    droppedRejected: 0,
    droppedRetriesExhausted: 0,
    droppedClosed: 0,
    droppedAtDeadline: 0,
  };
  readonly #events: ResourceClient<KubeObject>;
  readonly #clock: Clock;
  readonly #wall: () => number;
  readonly #logger: Logger | undefined;
  readonly #controller: string;
  readonly #instance: string;
  readonly #finishMs: number;
  readonly #refreshMs: number;
  readonly #spamBurst: number;
  readonly #spamQps: number;
  readonly #maxQueued: number;
  readonly #maxTries: number;
  readonly #retry: BackoffPolicy;
  readonly #random: () => number;
  readonly #cache = new Map<string, Cached>();
  readonly #similar: SimilarEventAggregator;
  readonly #spam = new Map<string, TokenBucketRateLimiter>();
  readonly #queue: Job[] = [];
  readonly #retries = new Set<unknown>();
  #sweep: unknown;
  #pumping: Promise<void> | undefined;
  #closed = false;
  readonly #closeTimeoutMs: number;
  /** Aborted when `close()` reaches its deadline: the write in flight is cancelled, the queue dropped. */
  readonly #deadline = new AbortController();
  #closing: Promise<void> | undefined;

  constructor(options: EventRecorderOptions) {
    if (
      typeof options.reportingController !== 'string' ||
      options.reportingController === '' ||
      options.reportingController.length > 128
    ) {
      throw new OptionsError('EventRecorder', 'reportingController must be 1-128 characters');
    }
    this.#events = options.client.resource(eventsResource);
    this.#clock = options.clock ?? options.client.clock;
    this.#wall = options.wallClock ?? Date.now;
    this.#logger = options.logger;
    this.#controller = options.reportingController;
    this.#instance = (options.reportingInstance ?? defaultReportingInstance()).slice(0, 128);
    this.#closeTimeoutMs = closeTimeout('closeTimeoutMs', options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
    this.#finishMs = options.finishMs ?? 6 * 60_000;
    this.#refreshMs = options.refreshMs ?? 30 * 60_000;
    this.#spamBurst = options.spamBurst ?? 25;
    this.#spamQps = options.spamQps ?? 1 / 300;
    this.#maxQueued = options.maxQueued ?? 1000;
    this.#maxTries = options.maxTries ?? 12;
    this.#retry = options.retry ?? DEFAULT_EVENT_RETRY;
    checkBackoffPolicy(this.#retry, 'EventRecorder', 'retry');
    this.#random = options.random ?? Math.random;
    const maxEvents = options.aggregateMaxEvents ?? DEFAULT_AGGREGATE_MAX_EVENTS;
    const intervalMs = options.aggregateIntervalMs ?? DEFAULT_AGGREGATE_INTERVAL_MS;
    if (!Number.isInteger(maxEvents) || maxEvents < 1)
      throw new OptionsError('EventRecorder', `aggregateMaxEvents must be an integer >= 1, got ${String(maxEvents)}`);
    if (!(intervalMs >= 0))
      throw new OptionsError('EventRecorder', `aggregateIntervalMs must be >= 0, got ${String(intervalMs)}`);
    this.#similar = new SimilarEventAggregator(maxEvents, intervalMs);
  }

  /** The event's source, as client-go's `Source{Component, Host}`: what the correlator's keys start with. */
  get #source(): string {
    return `${this.#controller}\u0000${this.#instance}`;
  }

  /**
   * Records one event about `regarding`. Returns at once. Throws `OptionsError`
   * only for an event the apiserver could never accept (no name, bad type, empty reason or action).
   */
  event(regarding: ObjectReference, input: EventInput): void {
    checkEvent(regarding, input);
    this.stats.recorded += 1;
    if (this.#closed) {
      this.stats.droppedClosed += 1;
      return;
    }
    const now = this.#clock.now();
    let key = eventKey(regarding, input, this.#controller);
    // client-go's EventCorrelator order: combine similar events first, then count exact repeats
    // (of the combined Event too), then the spam filter on what would be a new Event.
    if (this.#similar.observe(similarKey(regarding, input, this.#source), key, now)) {
      this.stats.combined += 1;
      input = { type: input.type, reason: input.reason, action: input.action, note: COMBINED_PREFIX + (input.note ?? '') };
      key = `combined\u0000${similarKey(regarding, input, this.#source)}`;
    }
    const cached = this.#cache.get(key);
    if (cached !== undefined && now - cached.lastSeen < this.#finishMs) {
      cached.lastSeen = now;
      this.stats.aggregated += 1;
      const series = cached.event.series;
      if (series === undefined) {
        // The first repeat turns the Event into a series and is written at once (client-go).
        cached.event.series = { count: 2, lastObservedTime: microTime(this.#wall()) };
        cached.lastWritten = now;
        this.#enqueue({ event: cached.event, series: true, cached, tries: 0 });
      } else {
        series.count += 1;
        series.lastObservedTime = microTime(this.#wall());
        cached.dirty = true;
      }
      return;
    }
    if (!this.#spamAllows(regarding)) {
      this.stats.droppedSpam += 1;
      this.#logger?.debug({ regarding: regarding.name, reason: input.reason }, 'event dropped by the per-object spam filter');
      return;
    }
    const event = makeEvent(regarding, input, {
      reportingController: this.#controller,
      reportingInstance: this.#instance,
      nowMs: this.#wall(),
    });
    if (!this.#enqueue({ event, series: false, tries: 0 })) return;
    if (this.#cache.size >= MAX_CORRELATOR_ENTRIES) this.#evictOldest();
    this.#cache.set(key, { event, lastSeen: now, lastWritten: now, dirty: false });
    this.#armSweep();
  }

  /** Resolves once every queued write has been sent (retries waiting on their timer are not awaited). */
  async flush(): Promise<void> {
    while (this.#pumping !== undefined) await this.#pumping;
  }

  /**
   * Stops recording: live series get their final count written, queued writes are sent, timers and
   * pending retries are dropped. Later `event()` calls are counted as `droppedClosed`. Bounded by
   * `timeoutMs` (default the `closeTimeoutMs` option): at the deadline the write in flight is
   * aborted, everything still pending is dropped and counted in `droppedAtDeadline`, and one warning
   * says how many. Concurrent and later calls share the first call's close.
   */
  close(options: EventCloseOptions = {}): Promise<void> {
    const timeoutMs = options.timeoutMs === undefined ? this.#closeTimeoutMs : closeTimeout('timeoutMs', options.timeoutMs);
    this.#closing ??= this.#close(timeoutMs);
    return this.#closing;
  }

  async #close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    for (const cached of this.#cache.values()) if (cached.dirty) this.#enqueue({ event: cached.event, series: true, tries: 0 });
    this.#cache.clear();
    if (this.#sweep !== undefined) this.#clock.clearTimeout(this.#sweep);
    this.#sweep = undefined;
    for (const handle of this.#retries) this.#clock.clearTimeout(handle);
    this.#retries.clear();
    let timer: unknown;
    if (timeoutMs !== Infinity && this.#pumping !== undefined)
      timer = this.#clock.setTimeout(() => this.#dropPending(timeoutMs), timeoutMs);
    await this.flush();
    if (timer !== undefined) this.#clock.clearTimeout(timer);
  }

  /** The deadline: cancel the write in flight and drop the queue, with ONE log line for all of it. */
  #dropPending(timeoutMs: number): void {
    // The write in flight is counted by #write when its abort lands; the queued ones here.
    const dropped = this.#queue.length + (this.#pumping === undefined ? 0 : 1);
    this.stats.droppedAtDeadline += this.#queue.length;
    this.#queue.length = 0;
    this.#deadline.abort(new Error(`event recorder closed after ${timeoutMs} ms`));
    if (dropped > 0)
      this.#logger?.warn({ dropped, timeoutMs }, `event recorder closed at its deadline: ${dropped} pending events dropped`);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Bounds the series cache like client-go's LRU: the oldest series ends early, its count written. */
  #evictOldest(): void {
    const [key, oldest] = this.#cache.entries().next().value!;
    this.#cache.delete(key);
    if (oldest.dirty) this.#enqueue({ event: oldest.event, series: true, cached: oldest, tries: 0 });
  }

  #spamAllows(regarding: ObjectReference): boolean {
    // client-go's getSpamKey: the source and the regarding object.
    const key = JSON.stringify([
      this.#source,
      regarding.apiVersion,
      regarding.kind,
      regarding.namespace,
      regarding.name,
      regarding.uid,
    ]);
    let bucket = this.#spam.get(key);
    if (bucket === undefined) {
      // Bounded like client-go's LRU of spam records: the oldest object's bucket is forgotten.
      if (this.#spam.size >= MAX_CORRELATOR_ENTRIES) this.#spam.delete(this.#spam.keys().next().value!);
      bucket = new TokenBucketRateLimiter({ qps: this.#spamQps, burst: this.#spamBurst, clock: this.#clock });
      this.#spam.set(key, bucket);
    }
    return bucket.tryTake();
  }

  #enqueue(job: Job): boolean {
    if (this.#queue.length >= this.#maxQueued) {
      this.stats.droppedQueueFull += 1;
      this.#logger?.warn({ reason: job.event.reason, queued: this.#queue.length }, 'event queue full: event dropped');
      return false;
    }
    this.#queue.push(job);
    this.#pumping ??= this.#pump().finally(() => (this.#pumping = undefined));
    return true;
  }

  /** One write at a time: a hot loop's events queue here instead of fanning out into concurrent requests. */
  async #pump(): Promise<void> {
    for (let job = this.#queue.shift(); job !== undefined; job = this.#queue.shift()) await this.#write(job);
  }

  async #write(job: Job): Promise<void> {
    const events = this.#events.inNamespace(job.event.metadata.namespace);
    const signal = this.#deadline.signal;
    if (signal.aborted) {
      this.stats.droppedAtDeadline += 1;
      return;
    }
    // Taken when the write starts, so it carries every repeat counted until now.
    const snapshot = structuredClone(job.event);
    if (job.cached) job.cached.dirty = false;
    try {
      if (job.series) {
        try {
          await events.patch(snapshot.metadata.name, { type: 'merge', body: { series: snapshot.series } }, { signal });
          this.stats.patched += 1;
          return;
        } catch (error) {
          // The Event may have expired from the server (1 h TTL) or its create failed: create it with the series.
          if (!isNotFound(error)) throw error;
        }
      }
      await events.create(snapshot as unknown as WriteObject, { signal });
      this.stats.created += 1;
    } catch (error) {
      // Already there: a series write created it first (client-go logs this at V(5) and moves on).
      if (isAlreadyExists(error)) return;
      if (signal.aborted) {
        this.stats.droppedAtDeadline += 1;
        return;
      }
      job.tries += 1;
      if (!transient(error)) {
        this.stats.droppedRejected += 1;
        this.#logger?.warn({ reason: snapshot.reason, err: error }, 'event refused by the apiserver: dropped');
        return;
      }
      if (job.tries >= this.#maxTries || this.#closed) {
        this.stats.droppedRetriesExhausted += 1;
        this.#logger?.warn({ reason: snapshot.reason, tries: job.tries, err: error }, 'event not written: retry limit reached');
        return;
      }
      const handle = this.#clock.setTimeout(
        () => {
          this.#retries.delete(handle);
          if (!this.#closed) this.#enqueue(job);
        },
        backoffDelay(this.#retry, job.tries, this.#random),
      );
      this.#retries.add(handle);
    }
  }

  #armSweep(): void {
    if (this.#sweep !== undefined || this.#cache.size === 0) return;
    this.#sweep = this.#clock.setTimeout(
      () => {
        this.#sweep = undefined;
        this.#sweepNow();
        this.#armSweep();
      },
      Math.min(this.#finishMs, this.#refreshMs),
    );
  }

  /** Ends quiet series (writing their final count) and refreshes long-lived ones. No timer runs while nothing is cached. */
  #sweepNow(): void {
    const now = this.#clock.now();
    for (const [key, cached] of this.#cache) {
      const ended = now - cached.lastSeen >= this.#finishMs;
      const stale = now - cached.lastWritten >= this.#refreshMs;
      if (cached.dirty && (ended || stale)) {
        cached.lastWritten = now;
        this.#enqueue({ event: cached.event, series: true, cached, tries: 0 });
      }
      if (ended) this.#cache.delete(key);
    }
  }
}
