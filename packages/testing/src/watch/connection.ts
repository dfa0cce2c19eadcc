import type { ServerResponse } from 'node:http';
import type { ResourceType } from '../kinds/resource.js';
import { matchesFields, matchesLabels, type FieldRequirement, type LabelRequirement } from '../selectors.js';
import type { KubeStatus } from '../status.js';
import { watchFrameBytes } from '../engine/serialized.js';
import type { StoredEvent } from '../engine/store.js';
import { partialBookmark, toPartialObject } from '../partial-metadata.js';
import { toTable, type IncludeObject, type TableVersion } from '../table.js';
import { inShard, type ParsedShardSelector } from '../shard-selector.js';
import type { ApiServerObject } from '../types.js';
import { FrameWriter } from './frame-writer.js';

/** What one watch connection selects and how it prints. */
export interface WatchSpec {
  resource: ResourceType;
  namespace: string | undefined;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
  /** The `shardSelector` applied (ShardedListAndWatch); undefined: every object. */
  shard?: ParsedShardSelector | undefined;
  bookmarks: boolean;
  table: { version: TableVersion; include: IncludeObject } | undefined;
  /** Objects (bookmarks included) are sent as `PartialObjectMetadata` (see partial-metadata.ts). */
  metadataOnly?: boolean | undefined;
  /** Writes at or below this revision are already reflected in what the watch sent. */
  afterRevision: number;
  /** Bytes a live event may find unsent in this watch's buffer before the watch is terminated; 0: no bound. */
  maxBufferBytes: number;
}

/** Timing for one watch connection, in milliseconds from its start. */
export interface WatchTiming {
  deadlineMs: number;
  bookmarkIntervalMs: number;
  bookmarkBeforeTimeoutMs: number;
}

/**
 * One open watch: newline-delimited JSON frames over a chunked 200 response, written through a
 * {@link FrameWriter} (frames of one tick coalesced, paced by the socket). A stalled watch holds
 * new frames back and defers its timeout, so bytes stop while the socket stays open.
 */
export class WatchConnection {
  readonly #out: FrameWriter;
  #stalled = false;
  /** Frames held back by a stall, each as its pieces of bytes (newline included). */
  #pending: Array<readonly Buffer[]> = [];
  #endWhenUnstalled = false;
  #ended = false;
  #sentTableColumns = false;
  /** True once the watch was closed for not reading (see terminateIfUnresponsive). */
  terminatedUnresponsive = false;
  readonly #timers: NodeJS.Timeout[] = [];

  readonly #res: ServerResponse;
  readonly #currentRevision: () => number;
  readonly #now: () => Date;
  readonly #onEnd: (c: WatchConnection) => void;

  constructor(
    res: ServerResponse,
    readonly spec: WatchSpec,
    currentRevision: () => number,
    now: () => Date,
    onEnd: (c: WatchConnection) => void,
  ) {
    this.#res = res;
    this.#currentRevision = currentRevision;
    this.#now = now;
    this.#onEnd = onEnd;
    this.#out = new FrameWriter(res);
    res.on('close', () => this.#finish());
    // A write racing a client disconnect surfaces here; the watch is simply over.
    res.on('error', () => this.#finish());
  }

  /** Starts the deadline and bookmark timers; call once the initial frames are written. */
  startTimers(t: WatchTiming): void {
    if (this.#ended) return;
    this.#timers.push(setTimeout(() => this.end(), t.deadlineMs));
    if (!this.spec.bookmarks) return;
    const pre = t.deadlineMs - t.bookmarkBeforeTimeoutMs;
    if (pre >= 0 && pre < t.deadlineMs) this.#timers.push(setTimeout(() => this.sendBookmark(), pre));
    if (t.bookmarkIntervalMs > 0 && t.bookmarkIntervalMs < t.deadlineMs) {
      this.#timers.push(setInterval(() => this.sendBookmark(), t.bookmarkIntervalMs));
    }
  }

  /** True until the stream ended or the client went away. */
  get open(): boolean {
    return !this.#ended;
  }

  #matches(o: ApiServerObject): boolean {
    if (this.spec.namespace !== undefined && o.metadata.namespace !== this.spec.namespace) return false;
    if (!matchesLabels(this.spec.labels, o.metadata.labels)) return false;
    if (this.spec.fields.length > 0 && !matchesFields(this.spec.fields, this.spec.resource.fieldSet(o))) return false;
    // uid and namespace never change, so an object never crosses a shard boundary mid-watch.
    if (this.spec.shard !== undefined && !inShard(this.spec.shard, o)) return false;
    return true;
  }

  /**
   * Delivers one committed write through the selector, the way the watch cache does: an object
   * that starts matching is ADDED, one that stops matching is DELETED.
   */
  deliver(e: StoredEvent): void {
    if (e.resource.id !== this.spec.resource.id || e.rev <= this.spec.afterRevision) return;
    const now = e.type !== 'DELETED' && this.#matches(e.object);
    const before = e.prev !== undefined && this.#matches(e.prev);
    let type: 'ADDED' | 'MODIFIED' | 'DELETED';
    if (e.type === 'DELETED') {
      if (!before) return;
      type = 'DELETED';
    } else if (now && before) type = 'MODIFIED';
    else if (now) type = 'ADDED';
    else if (before) type = 'DELETED';
    else return;
    this.#sendObject(type, e.object);
    this.#terminateIfUnresponsive();
  }

  /**
   * The cacher's rule for a watcher that does not keep up: when its buffer is full, the watcher
   * is closed without an ERROR frame (cacheWatcher.add → forget), so the client reads what was
   * already sent, then EOF, and re-watches from its resourceVersion. Memory stays bounded by the limit plus
   * one frame: unsent bytes are those queued in the writer plus those the response still holds.
   * Initial-state frames are exempt: a client has not had a chance to read yet.
   */
  #terminateIfUnresponsive(): void {
    const limit = this.spec.maxBufferBytes;
    if (limit <= 0 || this.#ended || this.#stalled || this.#out.unsentBytes <= limit) return;
    this.terminatedUnresponsive = true;
    this.#out.end();
    this.#finish();
  }

  /** Sends an initial-state ADDED frame. */
  sendInitial(o: ApiServerObject): void {
    if (this.#matches(o)) this.#sendObject('ADDED', o);
  }

  #sendObject(type: 'ADDED' | 'MODIFIED' | 'DELETED', o: ApiServerObject): void {
    if (this.spec.table !== undefined) {
      const table = toTable(this.spec.resource, [o], {
        include: this.spec.table.include,
        version: this.spec.table.version,
        resourceVersion: o.metadata.resourceVersion ?? '',
        withColumns: !this.#sentTableColumns,
        now: this.#now(),
      });
      this.#sentTableColumns = true;
      this.#write(JSON.stringify({ type, object: table }));
      return;
    }
    if (this.spec.metadataOnly === true) {
      this.#write(JSON.stringify({ type, object: toPartialObject(o) }));
      return;
    }
    // Each stored object is encoded once for every watcher and every frame type (engine/serialized.ts).
    this.#writeFrame(watchFrameBytes(type, o));
  }

  /** A BOOKMARK carrying only kind, apiVersion and the current revision. */
  sendBookmark(annotations?: Record<string, string>): void {
    if (!this.spec.bookmarks || this.#ended) return;
    // A watch from a future revision has nothing to report until the store reaches it: a bookmark
    // below its start would move the client's resourceVersion back.
    if (this.#currentRevision() < this.spec.afterRevision) return;
    const metadata: Record<string, unknown> = { resourceVersion: String(this.#currentRevision()) };
    if (annotations !== undefined) metadata['annotations'] = annotations;
    const r = this.spec.resource;
    if (this.spec.metadataOnly === true) {
      this.#write(JSON.stringify({ type: 'BOOKMARK', object: partialBookmark(metadata) }));
      return;
    }
    this.#write(
      JSON.stringify({ type: 'BOOKMARK', object: { kind: r.kind, apiVersion: r.apiVersion, metadata, ...r.bookmarkStub } }),
    );
  }

  /** An in-band ERROR frame followed by a clean end, as the apiserver reports watch failures. */
  sendErrorAndEnd(status: KubeStatus): void {
    this.#write(JSON.stringify({ type: 'ERROR', object: status }));
    this.end();
  }

  /** Writes one raw line (test injection); no validation. */
  writeRaw(line: string): void {
    this.#write(line);
  }

  #write(line: string): void {
    this.#writeFrame([Buffer.from(`${line}\n`)]);
  }

  #writeFrame(pieces: readonly Buffer[]): void {
    if (this.#ended) return;
    if (this.#stalled) this.#pending.push(pieces);
    else this.#out.push(pieces);
  }

  /** Stops writing; frames and the deadline wait for {@link unstall}. */
  stall(): void {
    this.#stalled = true;
  }

  /** Flushes what a stall held back, then honours a deadline that passed meanwhile. */
  unstall(): void {
    if (!this.#stalled) return;
    this.#stalled = false;
    const frames = this.#pending;
    this.#pending = [];
    for (const f of frames) this.#writeFrame(f);
    if (this.#endWhenUnstalled) this.end();
  }

  /** True while stalled. */
  get isStalled(): boolean {
    return this.#stalled;
  }

  /** Ends the stream cleanly (the client reads EOF), unless stalled. */
  end(): void {
    if (this.#ended) return;
    if (this.#stalled) {
      this.#endWhenUnstalled = true;
      return;
    }
    this.#out.end();
    this.#finish();
  }

  /** Ends now, even when stalled; `abrupt` resets the socket instead of finishing the response. */
  drop(abrupt: boolean): void {
    if (this.#ended) return;
    this.#stalled = false;
    this.#pending = [];
    if (abrupt) {
      this.#out.discard();
      this.#res.socket?.destroy();
    } else this.#out.end();
    this.#finish();
  }

  #finish(): void {
    if (this.#ended) return;
    this.#ended = true;
    // After a clean end the writer is already done; after a client disconnect its frames have nowhere to go.
    this.#out.discard();
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.length = 0;
    this.#onEnd(this);
  }
}
