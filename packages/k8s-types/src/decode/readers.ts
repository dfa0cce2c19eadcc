/**
 * A view's byte reader: reads the object at the cursor (`cursor.ts`) into exactly what the view's
 * zod schema would make of the same JSON (through `parseObject`), or ends the read with
 * `NOT_PROVEN` when it cannot prove that. Frames and LIST pages are read around it (`frames.ts`).
 */
export type ObjectReader<T> = () => T;

const readers = new WeakMap<object, ObjectReader<unknown>>();

/** Gives `view` a byte reader (`parseWatchFrame` and `parseListPage` then try it first). Returns `view`. */
export function withByteReader<T extends object>(view: T, reader: ObjectReader<unknown>): T {
  readers.set(view, reader);
  return view;
}

/** The byte reader `view` was given, if any. */
export function byteReaderOf(view: object): ObjectReader<unknown> | undefined {
  return readers.get(view);
}
