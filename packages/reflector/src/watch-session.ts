import type { KubernetesObjectView } from '@reconcile-loop/k8s-types';
import { abortReason } from '@reconcile-loop/primitives';
import type { ReflectorCore } from './core.js';
import { KubeProtocolError } from '@reconcile-loop/kube-client';

/** What `next()` resolves to when the session was stopped from outside (abort, a timer). */
export const STOP: unique symbol = Symbol('stop');

/**
 * Why a session stopped before its stream did: the stream's signal aborted, the watch went silent
 * past its timeout plus the grace, a heal relist fell due, or (initial phase of a watch-list only)
 * `listTimeoutMs` passed before the initial-events-end bookmark.
 */
export type SessionStop = 'aborted' | 'idle' | 'heal' | 'deadline';

/**
 * Where the WATCH a session opens starts: from a `resourceVersion` (the watching state: it always
 * has one, from the listing or the frames since), or with its initial events (a watch-list, from
 * the newest state).
 */
export type SessionRequest = { readonly resourceVersion: string } | { readonly sendInitialEvents: true };

/**
 * One open WATCH request and the timers around it, shared by the two states that read a watch:
 * the initial phase of a watch-list and the watching state. Owning it as a value lets the
 * watching state continue on the very stream a watch-list synced on (kube-rs's
 * `InitialWatch { stream }` → `Watching { stream }`). Whoever ends the stream calls
 * {@link close}; every timer and listener is released there, exactly once.
 */
export class WatchSession<T extends KubernetesObjectView> {
  readonly timeoutSeconds: number;
  /** Silence tolerated before the watch is presumed dead: the sent timeout plus the grace. */
  readonly idleMs: number;
  readonly startedAt: number;
  /** Set by the first stop (a signal abort, a timer); the reader's current `next()` resolves to {@link STOP}. */
  stopped: SessionStop | undefined;
  readonly #core: ReflectorCore<T>;
  readonly #signal: AbortSignal;
  readonly #controller = new AbortController();
  readonly #iterator: AsyncIterator<unknown>;
  #batched = false;
  /** The current batch's frames not read yet: `#batch[#at…]`. */
  #batch: readonly unknown[] = [];
  #at = 0;
  readonly #onAbort = (): void => this.stop('aborted');
  #wake: ((value: typeof STOP) => void) | undefined;
  #lastFrameAt: number;
  #idleTimer: unknown;
  #healTimer: unknown;
  #deadlineTimer: unknown;
  #closed = false;

  /** Opens the WATCH `from` says; throws what the client throws synchronously (after releasing everything). */
  constructor(core: ReflectorCore<T>, signal: AbortSignal, from: SessionRequest) {
    this.#core = core;
    this.#signal = signal;
    const { clock } = core;
    this.timeoutSeconds = Math.max(1, Math.floor(core.options.watchTimeoutSeconds * (1 + core.random())));
    this.idleMs = this.timeoutSeconds * 1000 + core.options.idleGraceMs;
    this.startedAt = clock.now();
    this.#lastFrameAt = this.startedAt;
    signal.addEventListener('abort', this.#onAbort, { once: true });
    this.#armIdle(this.idleMs);
    core.watchOpened();
    try {
      const initial = 'sendInitialEvents' in from;
      const request = {
        ...core.scope,
        // A watch-list always asks for a consistent read of the newest state, as the LIST does.
        resourceVersion: initial ? '' : from.resourceVersion,
        timeoutSeconds: this.timeoutSeconds,
        allowWatchBookmarks: true,
        ...(initial ? { sendInitialEvents: true as const, resourceVersionMatch: 'NotOlderThan' as const } : {}),
        signal: this.#controller.signal,
      };
      // A client that hands over the frames of one socket read together is read a batch at a time.
      this.#batched = typeof core.client.watchBatches === 'function';
      this.#iterator = (this.#batched ? core.client.watchBatches!(request) : core.client.watch(request))[Symbol.asyncIterator]();
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** Stops the session (first reason wins): aborts the request and wakes a pending `next()`. */
  stop(why: SessionStop): void {
    this.stopped ??= why;
    this.#controller.abort(why === 'aborted' ? abortReason(this.#signal) : new Error(`watch stopped: ${why}`));
    this.#wake?.(STOP);
  }

  /**
   * The next frame of the socket read already in hand, synchronously; `undefined` when the batch is
   * used up or the session stopped (then {@link next} waits, or says {@link STOP}). A stop between
   * two frames of one batch ends the reading at the next frame, as it would between two reads.
   */
  buffered(): IteratorResult<unknown> | undefined {
    if (this.stopped || this.#at >= this.#batch.length) return undefined;
    return { done: false, value: this.#batch[this.#at++] };
  }

  /**
   * The next frame, the end of the stream, or {@link STOP}; rejects with the stream's failure.
   * Frames left in the current batch come first, so a watch-list that syncs mid-batch hands the
   * rest of that read to the watching state.
   */
  async next(): Promise<IteratorResult<unknown> | typeof STOP> {
    for (;;) {
      const held = this.buffered();
      if (held !== undefined) return held;
      if (this.stopped) return STOP;
      const source = this.#iterator;
      const next = await new Promise<IteratorResult<unknown> | typeof STOP>((resolve, reject) => {
        this.#wake = resolve;
        source.next().then(resolve, reject);
      });
      this.#wake = undefined;
      if (next === STOP || this.stopped) return STOP;
      if (next.done) return next;
      this.#lastFrameAt = this.#core.clock.now();
      if (!this.#batched) return next;
      if (!Array.isArray(next.value)) throw new KubeProtocolError('watchBatches yielded a value that is not an array of frames');
      this.#batch = next.value;
      this.#at = 0;
    }
  }

  /** One idle timer per watch, re-armed lazily: a frame only stamps the time. */
  #armIdle(delayMs: number): void {
    const { clock } = this.#core;
    this.#idleTimer = clock.setTimeout(() => {
      const silentFor = clock.now() - this.#lastFrameAt;
      if (silentFor >= this.idleMs) this.stop('idle');
      else this.#armIdle(this.idleMs - silentFor);
    }, delayMs);
  }

  /** Arms the heal timer for the core's due heal, if any and not armed yet. */
  armHeal(): void {
    const core = this.#core;
    const dueAt = core.healDueAt;
    if (this.#healTimer !== undefined || dueAt === undefined) return;
    this.#healTimer = core.clock.setTimeout(() => this.stop('heal'), Math.max(0, dueAt - core.clock.now()));
  }

  /** Schedules a heal relist (a frame was skipped) unless one is due already. */
  scheduleHeal(): void {
    this.#core.healScheduled();
    this.armHeal();
  }

  /** Arms the initial phase's deadline: `ms` from now the session stops with `'deadline'`. */
  armDeadline(ms: number): void {
    this.#deadlineTimer = this.#core.clock.setTimeout(() => this.stop('deadline'), ms);
  }

  /** Clears the initial phase's deadline (the initial-events-end bookmark arrived). */
  clearDeadline(): void {
    if (this.#deadlineTimer !== undefined) this.#core.clock.clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
  }

  /** Ends the request and releases every timer and listener; idempotent. Does not await the iterator's `return()`. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const { clock } = this.#core;
    this.#core.watchClosed();
    this.#signal.removeEventListener('abort', this.#onAbort);
    clock.clearTimeout(this.#idleTimer);
    if (this.#healTimer !== undefined) clock.clearTimeout(this.#healTimer);
    this.clearDeadline();
    this.#controller.abort();
    // Not awaited: a client that ignores its signal must not hold up teardown.
    try {
      this.#iterator?.return?.()?.catch(() => {});
    } catch {
      // A hand-written iterator may throw from return(); the watch is over either way.
    }
  }
}
