import { systemClock, type Clock } from './clock.js';

/** The reason an aborted signal carries (a `DOMException` `AbortError` when it gave none). */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * Settles as `promise` does, or rejects with the signal's reason ({@link abortReason}) as soon as
 * `signal` aborts (at once when it already has), even if `promise` never settles. Leaves no listener
 * on `signal` once the result settles, and always observes `promise`, so its rejection after it
 * lost the race is never unhandled.
 */
export function raceAbort<V>(promise: Promise<V>, signal: AbortSignal): Promise<V> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(abortReason(signal));
  }
  return new Promise<V>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Options of {@link sleep}. */
export interface SleepOptions {
  /** Rejects the sleep with its reason as soon as it aborts. */
  readonly signal?: AbortSignal | undefined;
  /** Whether the pending sleep keeps Node alive (see `TimerOptions.keepAlive`). Default false. */
  readonly keepAlive?: boolean | undefined;
}

/**
 * Resolves after `delayMs` on `clock`, or rejects with the signal's reason as soon as it aborts
 * (also when it already has). Never leaves a timer or listener behind.
 */
export function sleep(clock: Clock, delayMs: number, options?: SleepOptions | AbortSignal): Promise<void> {
  const { signal, keepAlive } = options instanceof AbortSignal ? { signal: options, keepAlive: false } : (options ?? {});
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(abortReason(signal!));
    };
    const handle = clock.setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, delayMs),
      { keepAlive },
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Options of {@link linkSignals}. */
export interface LinkSignalsOptions {
  /** Aborts the linked signal this long after the link is made (on `clock`). */
  readonly timeoutMs?: number | undefined;
  /** What the timeout aborts with. Default a `DOMException` named `TimeoutError`. */
  readonly timeoutReason?: (() => unknown) | undefined;
  /** The clock the timeout runs on. Default {@link systemClock} (never keeps Node alive). */
  readonly clock?: Clock | undefined;
}

/** A signal linked to others by {@link linkSignals}; dispose it (or `using` it) when the work ends. */
export interface LinkedSignal extends Disposable {
  /** Aborts with the reason of the first input to abort, or the timeout's. */
  readonly signal: AbortSignal;
  /** Removes every listener and the timer; the signal stays as it is. Idempotent. */
  dispose(): void;
}

/**
 * One signal that aborts when any of `signals` does (with that signal's reason) or when
 * `timeoutMs` passes on `clock`, whichever is first. `undefined` inputs are skipped, so optional
 * caller signals pass straight in. Unlike `AbortSignal.any` + `AbortSignal.timeout`, the timeout
 * honours a `ManualClock`, and {@link LinkedSignal.dispose} detaches at once instead of leaving
 * listeners on a long-lived parent until it is collected (a loop's signal outlives millions of
 * reconciles).
 */
export function linkSignals(signals: readonly (AbortSignal | undefined)[], options?: LinkSignalsOptions): LinkedSignal {
  const controller = new AbortController();
  const attached: AbortSignal[] = [];
  let timer: unknown;
  let disposed = false;
  const clock = options?.clock ?? systemClock;
  const dispose = (): void => {
    if (disposed) return;
    disposed = true;
    for (const s of attached) s.removeEventListener('abort', onAbort);
    if (timer !== undefined) clock.clearTimeout(timer);
  };
  function onAbort(this: AbortSignal): void {
    controller.abort(abortReason(this));
    dispose();
  }
  for (const s of signals) {
    if (s === undefined) continue;
    if (s.aborted) {
      controller.abort(abortReason(s));
      dispose();
      break;
    }
    s.addEventListener('abort', onAbort, { once: true });
    attached.push(s);
  }
  if (!controller.signal.aborted && options?.timeoutMs !== undefined) {
    const reason = options.timeoutReason ?? (() => new DOMException('The operation timed out', 'TimeoutError'));
    timer = clock.setTimeout(() => {
      timer = undefined;
      controller.abort(reason());
      dispose();
    }, options.timeoutMs);
  }
  return { signal: controller.signal, dispose, [Symbol.dispose]: dispose };
}
