import type { MvccStore } from '../engine/store.js';
import type { WatchConnection } from './connection.js';

/**
 * Watch fan-out: the set of open watches, fed synchronously by every commit of the store, and the
 * test controls that act on all of them at once (drop, stall, inject).
 */
export class WatchHub {
  readonly #watches = new Set<WatchConnection>();
  #terminated = 0;

  readonly #onChange: () => void;

  /** `onChange` runs whenever a watch opens or closes (the waiters of `waitForWatches`). */
  constructor(store: MvccStore, onChange: () => void) {
    this.#onChange = onChange;
    store.subscribe((e) => {
      // Fan-out runs inside the writer's request; one broken watch must not fail that write.
      for (const w of [...this.#watches]) {
        try {
          w.deliver(e);
        } catch {
          w.drop(true);
        }
      }
    });
  }

  /** Open watches. */
  get size(): number {
    return this.#watches.size;
  }

  /** Watches closed because their client did not read (the cacher's terminated-watchers counter). */
  get terminatedCount(): number {
    return this.#terminated;
  }

  /** Registers an open watch (it unregisters itself through {@link closed} when it ends). */
  add(c: WatchConnection): void {
    this.#watches.add(c);
    this.#onChange();
  }

  /** Called by a connection when it ends. */
  closed(c: WatchConnection): void {
    if (c.terminatedUnresponsive) this.#terminated++;
    this.#watches.delete(c);
    this.#onChange();
  }

  /** Ends every open watch: cleanly (EOF) or by resetting sockets. */
  dropAll(abrupt: boolean): number {
    const all = [...this.#watches];
    for (const w of all) w.drop(abrupt);
    return all.length;
  }

  /** Stalls every open watch; returns how many were not already stalled. */
  stallAll(): number {
    let n = 0;
    for (const w of this.#watches) {
      if (!w.isStalled) n++;
      w.stall();
    }
    return n;
  }

  /** Resumes every stalled watch; returns how many were stalled. */
  unstallAll(): number {
    let n = 0;
    for (const w of [...this.#watches]) {
      if (w.isStalled) n++;
      w.unstall();
    }
    return n;
  }

  /** Writes one raw line into every open watch. */
  writeRawAll(line: string): number {
    for (const w of this.#watches) w.writeRaw(line);
    return this.#watches.size;
  }
}
