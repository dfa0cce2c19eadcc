import { shardHash, type ShardRange } from '@reconcile-loop/primitives';
import type { ShardGate } from '../src/index.js';

export const ALL: readonly ShardRange[] = [{ start: '0x0000000000000000', end: '0x10000000000000000' }];
export const NONE: readonly ShardRange[] = [];

/**
 * A shard gate whose admission is a set of hashes (what a `ShardMember` admits after its handover),
 * counting every enter and release, and failing the test on a double release.
 */
export class FakeShardGate implements ShardGate {
  ranges: readonly ShardRange[] = ALL;
  readonly admitted = new Set<string>();
  readonly inFlight = new Map<string, number>();
  enters = 0;
  releases = 0;
  doubleReleases = 0;
  refusals = 0;
  readonly #ranges = new Set<(ranges: readonly ShardRange[]) => void>();
  readonly #lost = new Set<(reason: unknown) => void>();

  get listeners(): number {
    return this.#ranges.size + this.#lost.size;
  }
  onRangesChanged(listener: (ranges: readonly ShardRange[]) => void): () => void {
    this.#ranges.add(listener);
    return () => this.#ranges.delete(listener);
  }
  onLost(listener: (reason: unknown) => void): () => void {
    this.#lost.add(listener);
    return () => this.#lost.delete(listener);
  }
  admits(hash: string): boolean {
    return this.admitted.has(hash);
  }
  enter(hash: string): (() => void) | undefined {
    if (!this.admits(hash)) {
      this.refusals += 1;
      return undefined;
    }
    this.enters += 1;
    this.inFlight.set(hash, (this.inFlight.get(hash) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) {
        this.doubleReleases += 1;
        return;
      }
      done = true;
      this.releases += 1;
      this.inFlight.set(hash, this.inFlight.get(hash)! - 1);
    };
  }
  status(): unknown {
    return { members: ['me'] };
  }
  admit(...uids: string[]): void {
    for (const uid of uids) this.admitted.add(shardHash(uid));
  }
  revoke(...uids: string[]): void {
    for (const uid of uids) this.admitted.delete(shardHash(uid));
  }
  setRanges(ranges: readonly ShardRange[]): void {
    this.ranges = ranges;
    for (const listener of [...this.#ranges]) listener(ranges);
  }
  lose(): void {
    this.admitted.clear();
    for (const listener of [...this.#lost]) listener(new Error('lease lost'));
  }
  get running(): number {
    return [...this.inFlight.values()].reduce((a, b) => a + b, 0);
  }
}
