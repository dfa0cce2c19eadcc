/**
 * @reconcile-loop/primitives: what every other package shares, with no dependencies. One clock, one
 * way to wait and to link abort signals, one logger and one way to log a streak of failures, one backoff
 * policy, one key type, one error base.
 */
export { systemClock, timerDelay, MAX_TIMER_MS, type Clock, type TimerOptions } from './clock.js';
export { ManualClock, InvalidClockStepError } from './manual-clock.js';
// Optional option bags and the shape linkSignals returns are not exported: a call spells them inline.
export { abortReason, raceAbort, sleep, linkSignals } from './abort.js';
export { silentLogger, type Logger } from './logger.js';
export { FailureStreak } from './failure-streak.js';
export { isKey, objectKey, parseKey, InvalidKeyError, type Key, type NamespacedName } from './key.js';
export { Backoff, backoffDelay, checkBackoffPolicy, type BackoffPolicy } from './backoff.js';
export { ReconcileLoopError, OptionsError, isReconcileLoopError } from './errors.js';
export { shardHash, shardSelector, inShardRanges, type ShardRange } from './shard.js';
