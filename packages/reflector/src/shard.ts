import type { KubernetesObjectView } from '@reconcile-loop/k8s-types';
import type { SourceShard } from '@reconcile-loop/object-store';
import { inShardRanges, OptionsError, shardHash, shardSelector, type Logger, type ShardRange } from '@reconcile-loop/primitives';

/**
 * The `shard` option of a reflector: the slice of the kind this replica holds, by the 64-bit FNV-1a
 * hash of `metadata.uid` or `metadata.namespace` (KEP-5866's sharded LIST/WATCH).
 */
export interface ShardOption {
  /** The field hashed: `'uid'` (even spread, one object at a time) or `'namespace'` (a namespace's objects together). */
  readonly field: 'uid' | 'namespace';
  /** The arcs `[start, end)` of the hash space this replica owns (primitives' `ShardRange`); at least one. */
  readonly ranges: readonly ShardRange[];
}

/**
 * Who is filtering right now: `'server'` (the last LIST echoed the selector in
 * `metadata.shardInfo`), `'client'` (the server ignored it: the reflector drops what it does not
 * own), or `'unverified'` (no LIST since the ranges were set: a watch-list carries no list
 * metadata; the client still checks every object).
 */
export type ShardFilter = SourceShard['filter'];

/**
 * The ranges a reflector owns and how they are enforced. The selector is sent with every LIST
 * page and WATCH (watch-list included). A LIST's items are filtered here only when its first page
 * does not echo the selector (`metadata.shardInfo`); every watch frame and every watch-list initial
 * event is hashed here whatever the server said (one FNV-1a per object: about a microsecond for a
 * uid), because nothing on a watch echoes the selector and HA apiservers with different gates (a
 * rolling upgrade) may answer the LIST with the filter and the WATCH without it.
 */
export class ShardState {
  readonly field: 'uid' | 'namespace';
  #ranges: readonly ShardRange[];
  #selector: string;
  #filter: ShardFilter = 'unverified';
  /** Set once the fallback warning was logged: a server without the gate is a fact of the cluster, said once. */
  #warned = false;
  #reshards = 0;
  #dropped = 0;

  /** @throws {OptionsError} for a field other than uid/namespace, no ranges or a malformed range. */
  constructor(option: ShardOption) {
    if (option === null || typeof option !== 'object') throw new OptionsError('Reflector', 'shard must be { field, ranges }');
    this.#selector = shardSelector(option.field, option.ranges);
    this.field = option.field;
    this.#ranges = Object.freeze([...option.ranges]);
  }

  /** The `shardSelector` query value sent with every request. */
  get selector(): string {
    return this.#selector;
  }

  get ranges(): readonly ShardRange[] {
    return this.#ranges;
  }

  /** Whether this replica owns `object`: the same hash and ranges the server applies. */
  owns(object: KubernetesObjectView): boolean {
    const metadata = object.metadata as { uid?: unknown; namespace?: unknown };
    const value = this.field === 'uid' ? metadata.uid : metadata.namespace;
    return inShardRanges(shardHash(typeof value === 'string' ? value : ''), this.#ranges);
  }

  /** New ranges (validated first; nothing changes on a throw). The next LIST verifies the filter again. */
  reshard(ranges: readonly ShardRange[]): void {
    this.#selector = shardSelector(this.field, ranges);
    this.#ranges = Object.freeze([...ranges]);
    this.#filter = 'unverified';
    this.#reshards++;
  }

  /**
   * A LIST's first page answered with `echo` (its `metadata.shardInfo.selector`, undefined when
   * absent): `'server'` when it is the selector sent, else `'client'`, warned once per reflector.
   * Returns whether the listing must be filtered here.
   */
  listed(echo: string | undefined, logger: Logger, fields: Record<string, unknown>): boolean {
    if (echo === this.#selector) {
      this.#filter = 'server';
      return false;
    }
    this.#fallBack(
      logger,
      fields,
      echo === undefined
        ? 'the server ignored shardSelector (no metadata.shardInfo: gate ShardedListAndWatch off, or older than 1.36)'
        : `the server echoed another shard selector (${echo})`,
    );
    return true;
  }

  /** An object outside the ranges arrived (a watch frame, a watch-list's initial event, a listing item): dropped and counted. */
  dropped(logger: Logger, fields: Record<string, unknown>): void {
    this.#dropped++;
    if (this.#filter !== 'client') this.#fallBack(logger, fields, 'an object outside the owned ranges arrived on a watch');
  }

  #fallBack(logger: Logger, fields: Record<string, unknown>, why: string): void {
    this.#filter = 'client';
    if (this.#warned) return;
    this.#warned = true;
    logger.warn(
      { ...fields, selector: this.#selector },
      `${why}; filtering on the client with the same FNV-1a 64 hash (every object is still listed and watched)`,
    );
  }

  health(): SourceShard {
    return {
      field: this.field,
      ranges: this.#ranges,
      selector: this.#selector,
      filter: this.#filter,
      reshards: this.#reshards,
      dropped: this.#dropped,
    };
  }
}
