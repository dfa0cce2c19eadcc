/**
 * Hooks a metrics package attaches to a {@link WorkQueue} — the events behind client-go's
 * workqueue metrics, without depending on any metrics library. Every timestamp (`at`) and
 * duration comes from the queue's injectable `Clock`, so a fake clock makes them exact in tests.
 *
 * | client-go metric | From |
 * | --- | --- |
 * | `depth` | `depth` on every event (or `WorkQueue.size`); per priority, poll `WorkQueue.byPriority()` |
 * | `adds_total` | one `onAdd` per key that became pending (a no-op `add` of a pending key emits nothing) |
 * | `queue_duration_seconds` | `onGet`'s `queuedMs` (add that made the key pending → handed out) |
 * | `work_duration_seconds` | `onDone`'s `workMs` (handed out → `done`) |
 * | `unfinished_work_seconds`, `longest_running_processor_seconds` | poll `WorkQueue.unfinishedWork()` |
 * | `retries_total` | not the queue: `@reconcile-loop/retry-scheduler`'s `onFailure` hook |
 *
 * A hook that throws is reported to the queue's `onError` option (dropped without one); it never
 * changes what the queue does.
 *
 * @typeParam K - the queue's key type.
 */
export interface WorkQueueObserver<K> {
  /** A key became pending: queued, handed straight to a waiting consumer, or marked dirty while held. */
  onAdd?(event: WorkQueueAddEvent<K>): void;
  /** A key was handed to a consumer (by `get` or `tryGet`). */
  onGet?(event: WorkQueueGetEvent<K>): void;
  /** A consumer released a key with `done`. */
  onDone?(event: WorkQueueDoneEvent<K>): void;
}

/** Payload of {@link WorkQueueObserver.onAdd}. */
export interface WorkQueueAddEvent<K> {
  /** The key. */
  readonly key: K;
  /** Clock time of the add. */
  readonly at: number;
  /** Keys queued (ready, not held) after the add. */
  readonly depth: number;
  /** True when the key is held by a consumer and will be queued again at its `done`. */
  readonly dirty: boolean;
  /** The priority it became pending at (always `normal` without the queue's `priority` option). */
  readonly priority: WorkQueuePriority;
}

/** Payload of {@link WorkQueueObserver.onGet}. */
export interface WorkQueueGetEvent<K> {
  /** The key handed out. */
  readonly key: K;
  /** Clock time of the hand-out. */
  readonly at: number;
  /** Keys still queued after it left. */
  readonly depth: number;
  /** Time since the `add` that made the key pending (client-go's queue duration). */
  readonly queuedMs: number;
  /** The priority it was handed out from (a key promoted from `low` counts as `normal`). */
  readonly priority: WorkQueuePriority;
}

/** Payload of {@link WorkQueueObserver.onDone}. */
export interface WorkQueueDoneEvent<K> {
  /** The key released. */
  readonly key: K;
  /** Clock time of the `done`. */
  readonly at: number;
  /** Time the key was held (client-go's work duration). */
  readonly workMs: number;
  /** True when the key was re-added while held and is now pending again. */
  readonly requeued: boolean;
}

/**
 * The two priorities a key is added at: `normal` (a change), or `low` (work a listing, a relist or a
 * resync produced: controller-runtime's `LowPriority`). Only a queue built with `priority: true`
 * tells them apart; otherwise every key is `normal`.
 */
export type WorkQueuePriority = 'normal' | 'low';

/** Which hook threw, as passed to the queue's `onError`. */
export type WorkQueueHook = keyof WorkQueueObserver<unknown>;

/** What {@link WorkQueue.unfinishedWork} reports: the keys held right now and for how long. */
export interface UnfinishedWork {
  /** Keys held by consumers. */
  readonly processing: number;
  /** Sum over held keys of the time since each was handed out (client-go's unfinished work). */
  readonly totalMs: number;
  /** The longest any held key has been held (client-go's longest running processor); 0 when none. */
  readonly longestMs: number;
}
