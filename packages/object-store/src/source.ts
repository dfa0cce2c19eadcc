/**
 * The source contract: what a stream driver opens, how its failures are retried, and how it reports
 * its health. Apart from `events.ts` (the wire format) so that the health types, which name object
 * keys, never import the file that imports them.
 */
import type { BackoffPolicy } from '@reconcile-loop/primitives';
import type { SourceEvent } from './events.js';
import type { SourceHealth } from './source-health.js';

/**
 * Something that can open a stream of source events. Each `open` starts a fresh stream that must
 * begin with a {@link ReplaceEvent} (the listing) and then carries upserts/deletes; aborting
 * `signal` ends it. A reflector implements this; so can any in-process registry.
 */
export interface Source<T> {
  /** Short name used in logs. */
  readonly name: string;
  open(signal: AbortSignal): AsyncIterable<SourceEvent<T>>;
  /**
   * How this source's failures are retried: the one option group for it. A source whose stream
   * never ends on a transient failure (a reflector) retries inside with it; a source whose stream
   * ends is reopened by the stream driver on it. Default {@link DEFAULT_SOURCE_RETRY}.
   */
  readonly retry?: BackoffPolicy | undefined;
  /** Optional: a snapshot of the source's health (see `SourceHealth`). */
  health?(): SourceHealth;
}

/** A source's default retry: 1 s doubling to 30 s (client-go's reflector caps at 30 s too). */
export const DEFAULT_SOURCE_RETRY: BackoffPolicy = Object.freeze({ initialMs: 1_000, maxMs: 30_000 });
