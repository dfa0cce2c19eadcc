/**
 * Shared pieces of the integration layer (the reflector over real loopback HTTP against the
 * embedded apiserver): a stream tap, a mirror store, bounded waits, cleanups, and the check every
 * failure scenario ends with — the store equals a fresh LIST minus the quarantined keys.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { ApiResource, KubernetesObjectView } from '@reconcile-loop/k8s-types';
import { CacheMeter, ObjectStore, type CacheMeterOptions, type SourceEvent } from '@reconcile-loop/object-store';
import { startApiServer, type ApiServer, type ApiServerOptions } from '@reconcile-loop/testing';
import { scaledClock, within as withinMs } from '@reconcile-loop/test-support';
import { expect } from 'vitest';
import { KubeApiClient, type ListWatchScope } from '../src/index.js';

/** One `timeoutSeconds` unit on the server, and 1000 ms on the reflector's clock. */
export const SECOND_MS = 50;
/** Upper bound of any single wait. */
export const WAIT_MS = 3_000;

export const fastClock = scaledClock(SECOND_MS);

export const within = <V>(promise: Promise<V>, what: string, ms = WAIT_MS): Promise<V> => withinMs(promise, what, ms);

/** Consumes a stream in the background, mirroring it into a store; a test takes its events one at a time, in order. */
export class Tap<T extends KubernetesObjectView> {
  readonly events: SourceEvent<T>[] = [];
  /** What a consumer's store holds after every event so far. */
  readonly store = new ObjectStore<T, string>({ keyMap: () => 'all' });
  /** The writer in front of the store, as a loop wires one per source: what the store costs, its budget. */
  readonly meter: CacheMeter<T, string>;
  error: unknown;
  ended = false;
  readonly done: Promise<void>;
  #taken = 0;
  #wake: (() => void) | undefined;

  constructor(stream: AsyncIterable<SourceEvent<T>>, meter?: CacheMeterOptions) {
    const writer = (this.meter = new CacheMeter(this.store, meter));
    this.done = (async () => {
      try {
        for await (const event of stream) {
          writer.apply(event);
          this.events.push(event);
          this.#wake?.();
        }
      } catch (error) {
        this.error = error;
      } finally {
        this.ended = true;
        this.#wake?.();
      }
    })();
  }

  /** The next event not yet taken; rejects if the stream ends or nothing arrives in time. */
  async next(what = 'the next source event'): Promise<SourceEvent<T>> {
    while (this.#taken >= this.events.length) {
      if (this.ended) throw new Error(`the stream ended (${String(this.error)}) before ${what}`);
      await within(new Promise<void>((resolve) => (this.#wake = resolve)), what);
    }
    return this.events[this.#taken++]!;
  }

  /** Takes events until one satisfies `test`. */
  async until(test: (event: SourceEvent<T>) => boolean, what: string): Promise<SourceEvent<T>> {
    for (;;) {
      const event = await this.next(what);
      if (test(event)) return event;
    }
  }

  /** Events that arrived and were not taken. */
  get untaken(): SourceEvent<T>[] {
    return this.events.slice(this.#taken);
  }
}

export function kubeConfigFor(server: ApiServer): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig());
  return kubeConfig;
}

const cleanups: Array<() => Promise<void> | void> = [];

/** Registers a teardown for the current test. */
export function onCleanup(cleanup: () => Promise<void> | void): void {
  cleanups.push(cleanup);
}

/** Runs (in reverse) and forgets every registered cleanup: call from `afterEach`. */
export async function runCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

export async function server(options: ApiServerOptions = {}): Promise<ApiServer> {
  const s = await startApiServer({ timeoutSecondsScaleMs: SECOND_MS, ...options });
  cleanups.push(() => s.close());
  return s;
}

/** Starts a stream and registers its teardown (abort, then wait for the stream to end). */
export function tapOf<T extends KubernetesObjectView>(
  source: { open(signal: AbortSignal): AsyncIterable<SourceEvent<T>> },
  meter?: CacheMeterOptions,
) {
  const controller = new AbortController();
  const tap = new Tap<T>(source.open(controller.signal), meter);
  cleanups.push(async () => {
    controller.abort();
    await within(tap.done, 'the stream to end at teardown');
  });
  return { tap, controller };
}

/**
 * The end state every failure scenario asserts: the consumer's store holds exactly what a fresh
 * LIST returns (same keys, same resourceVersions), minus the quarantined keys.
 */
export async function expectStoreEqualsFreshList<T extends KubernetesObjectView>(
  tap: Tap<T>,
  s: ApiServer,
  resource: ApiResource,
  scope: ListWatchScope,
  quarantined: readonly string[] = [],
): Promise<void> {
  const fresh = await new KubeApiClient(kubeConfigFor(s), resource).list({ ...scope, signal: AbortSignal.timeout(WAIT_MS) });
  const expected = new Map<string, string | undefined>();
  for (const item of fresh.items as Array<{ metadata: { name: string; namespace?: string; resourceVersion?: string } }>) {
    const key = item.metadata.namespace ? `${item.metadata.namespace}/${item.metadata.name}` : item.metadata.name;
    if (!quarantined.includes(key)) expected.set(key, item.metadata.resourceVersion);
  }
  // A quarantined key's store entry is its last good version (or none), not the listed one: left to the caller.
  const actual = new Map(
    [...tap.store.snapshot()]
      .filter(([key]) => !quarantined.includes(key))
      .map(([key, object]) => [key, object.metadata.resourceVersion]),
  );
  expect(Object.fromEntries([...actual].sort())).toEqual(Object.fromEntries([...expected].sort()));
}
