import type { WatchFrame } from '../watch.js';

/**
 * A view's byte reader: reads a watch frame straight from its bytes, or returns `undefined` when
 * the exact path (`JSON.parse`, then the view's zod schema) must read it. Whenever it returns a
 * frame, that frame equals what the exact path returns for the same bytes.
 */
export type ByteReader<T> = (bytes: Uint8Array) => WatchFrame<T> | undefined;

const readers = new WeakMap<object, ByteReader<unknown>>();

/** Gives `view` a byte reader (`parseWatchFrame` then tries it first). Returns `view`. */
export function withByteReader<T extends object>(view: T, reader: ByteReader<unknown>): T {
  readers.set(view, reader);
  return view;
}

/** The byte reader `view` was given, if any. */
export function byteReaderOf(view: object): ByteReader<unknown> | undefined {
  return readers.get(view);
}
