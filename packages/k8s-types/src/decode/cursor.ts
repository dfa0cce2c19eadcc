import { compactView } from './compact.js';
import { mix, PartsCache } from './parts-cache.js';
import { intern, isShareableStringMap } from './share.js';
import { EMPTY_STRING_MAP, parseRfc3339, utcMs } from './view-parts.js';
import {
  foundHash,
  keyTable,
  loadFrame,
  MEMBER_END,
  memberFound,
  memberLoaded,
  OUT_OF_WINDOW,
  SHARED_DECODE,
  SHARED_LONG,
  sharedLoaded,
  skipLoaded,
  unloadFrame,
} from './wasm-scan.js';
import {
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  FAIL,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
  SCANNED_ESCAPE,
  SCANNED_NON_ASCII,
  scanned,
  scannedHash,
  scanString,
  skipValue,
  skipWs,
  skipWsTo,
} from './scan.js';

/**
 * The reading half of a byte reader: a cursor over one frame's bytes and the token readers a view
 * reader is written with. Each reader reads the value at the cursor and leaves the cursor past it
 * (and past any whitespace). Whatever a reader cannot prove the exact path would read the same way
 * (a type the view refuses, a `null` where the view wants a value, a number that is not a plain
 * integer, a duplicate member) ends the read with {@link NOT_PROVEN}: the caller then reads the
 * frame the exact way (`JSON.parse` and zod), whose verdict is the one reported.
 *
 * One frame is read at a time, synchronously, so the cursor is module state: private to this module
 * (no other module can move it), read outside it only through {@link position}, {@link readSince}
 * and {@link lastSharedHash}, which V8 inlines like the variables they return.
 */

/** Thrown (never escapes a byte reader) when the bytes are not provably what the view reads. */
export const NOT_PROVEN: unique symbol = Symbol('not proven');

/** Ends the current read: the exact path decides this frame. */
export function notProven(): never {
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- a sentinel, caught by the reader's entry point
  throw NOT_PROVEN;
}

/** Node's Buffer, with the one-byte string slicing its typings leave out. */
type Bytes = Buffer & { latin1Slice(start: number, end: number): string };

const NOTHING = Buffer.alloc(0) as Bytes;

/** The frame being read, as a Buffer (for its native string slicing: the cheapest way to a string). */
let bytes = NOTHING;
/** Index of the next unread byte. */
let at = 0;
/** Whether the frame is also in the WebAssembly scanner's memory (see `wasm-scan.ts`). */
let loaded = false;

/**
 * The package's UTF-8 decoder for frame bytes: a malformed sequence reads as U+FFFD, and a
 * byte-order mark is kept (so `JSON.parse` refuses it, as the line path always did).
 */
export const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** Starts reading `frame` at its first value. */
export function begin(frame: Uint8Array): void {
  bytes = (Buffer.isBuffer(frame) ? frame : Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength)) as Bytes;
  loaded = loadFrame(bytes);
  at = skipWs(bytes, 0);
}

/**
 * Lets go of the frame read last. A frame is a view on its socket read (a LIST page, its whole
 * body): held here it would stay reachable until the next frame is read.
 */
export function end(): void {
  bytes = NOTHING;
  at = 0;
  loaded = false;
  unloadFrame();
}

/** Index of the next unread byte of the frame being read (to {@link restart} at, or to {@link readSince}). */
export function position(): number {
  return at;
}

/** The frame's bytes from `start` (a {@link position}) to the cursor, decoded and parsed as `JSON.parse` would. */
export function readSince(start: number): unknown {
  return JSON.parse(utf8.decode(bytes.subarray(start, at)));
}

/** Moves the cursor back to `index` (the start of a value read before). */
export function restart(index: number): void {
  at = index;
}

/** Whether the whole frame has been read (only whitespace after the last value). */
export function atEnd(): boolean {
  return skipWsTo(bytes, at) === bytes.length;
}

/** Steps over the value at the cursor, checking it is valid JSON. */
export function skip(): void {
  const end = loaded ? skipLoaded(at) : skipValue(bytes, at);
  if (end === FAIL) notProven();
  at = skipWs(bytes, end);
}

/** Whether the value at the cursor is `null` (and if so, steps over it). */
export function isNull(): boolean {
  const b = bytes;
  if (b[at] !== 0x6e || b[at + 1] !== 0x75 || b[at + 2] !== 0x6c || b[at + 3] !== 0x6c) return false;
  at = skipWs(b, at + 4);
  return true;
}

/** Scans the string at the cursor in `b` (it must be one; the cursor stays put): the index past its closing quote. */
function scanAtCursor(b: Uint8Array): number {
  if (b[at] !== QUOTE) notProven();
  const end = scanString(b, at);
  if (end === FAIL) notProven();
  return end;
}

/**
 * The string `bytes[start, end)` (quotes included) just scanned, decoded exactly as `JSON.parse` of
 * the decoded frame would: plain ASCII sliced; rare on the wire, the exact decoder for anything else
 * and `JSON.parse` for escapes.
 */
function decode(start: number, end: number): string {
  if (scanned === 0) return bytes.latin1Slice(start + 1, end - 1);
  if (scanned === SCANNED_NON_ASCII) return utf8.decode(bytes.subarray(start + 1, end - 1));
  return JSON.parse(utf8.decode(bytes.subarray(start, end))) as string;
}

/** Reads a string value, decoded exactly as `JSON.parse` of the decoded frame would. */
export function str(): string {
  const start = at;
  const end = scanAtCursor(bytes);
  at = skipWs(bytes, end);
  return decode(start, end);
}

/** Slots of the string cache: a power of two. */
const CACHE_SLOTS = 4096;
const cache: (string | undefined)[] = new Array<string | undefined>(CACHE_SLOTS).fill(undefined);

function spells(text: string, b: Uint8Array, start: number): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) !== b[start + i]) return false;
  return true;
}

/**
 * Reads a string the view shares (see `intern`). Values like these repeat across every frame
 * (namespaces, label keys and values, phases, condition types), so a plain ASCII one is looked up
 * by its bytes first: a hit builds no string at all and is already the shared instance. The cache
 * is a fixed table where a later string takes a slot over: bounded, and losing a slot loses
 * sharing only.
 */
export function sharedStr(): string {
  return loaded ? sharedInWasm() : sharedInJs();
}

/** {@link sharedStr} with the string scanned, and looked up by its bytes, here. */
function sharedInJs(): string {
  const b = bytes;
  const start = at;
  const end = scanAtCursor(b);
  at = skipWs(b, end);
  if (scanned !== 0) return sharedDecoded(start, end);
  const length = end - start - 2;
  const hash = scannedHash ^ length;
  sharedHash = hash;
  const slot = hash & (CACHE_SLOTS - 1);
  const held = cache[slot];
  if (held !== undefined && held.length === length && spells(held, b, start + 1)) return held;
  const fresh = intern(b.latin1Slice(start + 1, end - 1));
  cache[slot] = fresh;
  return fresh;
}

/**
 * The strings {@link sharedStr} found through the WebAssembly scanner, by the slot whose bytes the
 * scanner keeps (its own table: a slot here holds a string exactly when the scanner's slot holds
 * its bytes, which the JavaScript path's table cannot promise).
 */
const wasmCache: (string | undefined)[] = new Array<string | undefined>(CACHE_SLOTS).fill(undefined);

/** {@link sharedStr} with the string scanned, and looked up by its bytes, in the WebAssembly scanner. */
function sharedInWasm(): string {
  const start = at;
  if (bytes[start] !== QUOTE) notProven();
  const end = sharedLoaded(start);
  if (end === FAIL) notProven();
  if (end === OUT_OF_WINDOW) return sharedInJs();
  const found = memberFound();
  let text: string;
  if (found >= 0) text = wasmCache[found]!;
  else if (found === SHARED_DECODE) {
    // An escape or non-ASCII: scanned again in JavaScript (rare), for `decode`'s flags.
    scanAtCursor(bytes);
    at = skipWs(bytes, end);
    return sharedDecoded(start, end);
  } else {
    text = intern(bytes.latin1Slice(start + 1, end - 1));
    if (found !== SHARED_LONG) wasmCache[-1 - found] = text;
  }
  sharedHash = foundHash();
  at = skipWs(bytes, end);
  return text;
}

/** A shared string with an escape or a non-ASCII byte, just scanned: decoded, interned, hashed by its length. */
function sharedDecoded(start: number, end: number): string {
  const text = intern(decode(start, end));
  sharedHash = text.length;
  return text;
}

/** A hash of the string {@link sharedStr} last returned (equal strings, equal hashes). */
let sharedHash = 0;

/** A hash of the string {@link sharedStr} last returned (equal strings, equal hashes). */
export function lastSharedHash(): number {
  return sharedHash;
}

/** Reads a boolean. */
export function bool(): boolean {
  const b = bytes;
  const c = b[at];
  if (c === 0x74 && b[at + 1] === 0x72 && b[at + 2] === 0x75 && b[at + 3] === 0x65) {
    at = skipWs(b, at + 4);
    return true;
  }
  if (c === 0x66 && b[at + 1] === 0x61 && b[at + 2] === 0x6c && b[at + 3] === 0x73 && b[at + 4] === 0x65) {
    at = skipWs(b, at + 5);
    return false;
  }
  return notProven();
}

/**
 * Reads an integer written as plain digits (`-?(0|[1-9][0-9]*)`, at most 15 digits, so exactly a
 * safe integer). Anything else a JSON number can be (`1.0`, `1e3`, longer) is left to the exact path.
 */
export function int(): number {
  const b = bytes;
  let i = at;
  const negative = b[i] === 0x2d;
  if (negative) i++;
  let c = b[i]!;
  if (!(c >= 0x30 && c <= 0x39)) notProven();
  let value = 0;
  const first = i;
  do {
    value = value * 10 + (c - 0x30);
    c = b[++i]!;
  } while (c >= 0x30 && c <= 0x39);
  if (i - first > 15 || (b[first] === 0x30 && i - first > 1) || c === 0x2e || c === 0x65 || c === 0x45) notProven();
  at = skipWs(b, i);
  return negative ? -value : value;
}

/** Reads a `Time` as the view holds it: epoch ms, or `undefined` for `null`. */
export function time(): number | undefined {
  if (isNull()) return undefined;
  // The apiserver's one spelling, `"YYYY-MM-DDTHH:MM:SSZ"`, read from the bytes without a string;
  // anything else through the string path (`Date.parse` decides there).
  const b = bytes;
  const s = at + 1;
  if (
    b[at] === QUOTE &&
    b[s + 20] === QUOTE &&
    b[s + 4] === 0x2d &&
    b[s + 7] === 0x2d &&
    b[s + 10] === 0x54 &&
    b[s + 13] === 0x3a &&
    b[s + 16] === 0x3a &&
    b[s + 19] === 0x5a
  ) {
    const ms = utcMs(
      digits(b, s, 4),
      digits(b, s + 5, 2),
      digits(b, s + 8, 2),
      digits(b, s + 11, 2),
      digits(b, s + 14, 2),
      digits(b, s + 17, 2),
    );
    if (!Number.isNaN(ms)) {
      at = skipWs(b, s + 21);
      return ms;
    }
  }
  const ms = parseRfc3339(str());
  if (Number.isNaN(ms)) notProven();
  return ms;
}

/** The number `count` ASCII digits at `start` spell, or NaN. */
function digits(b: Uint8Array, start: number, count: number): number {
  let value = 0;
  for (let i = start; i < start + count; i++) {
    const digit = b[i]! - 0x30;
    if (digit < 0 || digit > 9) return Number.NaN;
    value = value * 10 + digit;
  }
  return value;
}

/** Enters the object or array at the cursor (`open` and `close` its brackets); `true` when it holds a value to read. */
function enter(open: number, close: number): boolean {
  const b = bytes;
  if (b[at] !== open) notProven();
  at = skipWs(b, at + 1);
  if (b[at] !== close) return true;
  at = skipWsTo(b, at + 1);
  return false;
}

/** After a value inside the object or array `close` ends: `true` when another follows, `false` past `close`. */
function next(close: number): boolean {
  const b = bytes;
  const c = b[at];
  if (c === COMMA) {
    at = skipWs(b, at + 1);
    return true;
  }
  if (c !== close) notProven();
  // A frame's last byte closes it: never read past it (see skipWsTo).
  at = skipWsTo(b, at + 1);
  return false;
}

/** Enters the object at the cursor; `true` when it has a member to read. */
export const openObject = (): boolean => enter(OPEN_BRACE, CLOSE_BRACE);
/** After a member's value: `true` when another member follows, `false` past the closing brace. */
export const nextMember = (): boolean => next(CLOSE_BRACE);
/** Enters the array at the cursor; `true` when it has an item to read. */
export const openArray = (): boolean => enter(OPEN_BRACKET, CLOSE_BRACKET);
/** After an item: `true` when another item follows, `false` past the closing bracket. */
export const nextItem = (): boolean => next(CLOSE_BRACKET);

/**
 * The member names one object level of a view reads, matched against a key's bytes without
 * building a string (a view reads a handful of an object's members and steps over the rest): a
 * table by the key's hash (from {@link scanString}), sized so no two names share a slot, then a
 * byte comparison.
 */
export class KeySet {
  readonly #names: readonly string[];
  readonly #slots: Int32Array;
  readonly #mask: number;
  #table: number | undefined;

  /** `names` are ASCII; a member's index is its position here. */
  constructor(names: readonly string[]) {
    this.#names = names;
    const hashes = names.map((name) => {
      let hash = 0;
      for (let i = 0; i < name.length; i++) hash = (Math.imul(hash, 31) + name.charCodeAt(i)) | 0;
      return hash;
    });
    let size = 8;
    for (;;) {
      const slots = new Int32Array(size).fill(-1);
      if (hashes.every((hash, index) => (slots[hash & (size - 1)] === -1 ? ((slots[hash & (size - 1)] = index), true) : false))) {
        this.#slots = slots;
        this.#mask = size - 1;
        return;
      }
      size *= 2;
    }
  }

  /** Index of the name `b[start, end)` spells (`hash` being its hash), or -1. */
  match(b: Uint8Array, start: number, end: number, hash: number): number {
    const index = this.#slots[hash & this.#mask]!;
    if (index < 0) return -1;
    const name = this.#names[index]!;
    return name.length === end - start && spells(name, b, start) ? index : -1;
  }

  /** Index of `name` (for a key spelled with escapes), or -1. */
  indexOf(name: string): number {
    return this.#names.indexOf(name);
  }

  /** This set's table in the WebAssembly scanner's memory (written on first use), or -1 without one. */
  get table(): number {
    if (this.#table === undefined) this.#table = keyTable(this.#names);
    return this.#table;
  }
}

/**
 * Reads a member's key and its colon; returns the key's index in `keys`, or -1 for a member the
 * view does not read (the caller then {@link skip}s its value).
 */
export function key(keys: KeySet): number {
  const b = bytes;
  const start = at;
  const end = scanAtCursor(b);
  const name = (scanned & SCANNED_ESCAPE) === 0 ? undefined : decode(start, end);
  const hash = scannedHash;
  at = skipWs(b, end);
  if (b[at] !== COLON) notProven();
  at = skipWs(b, at + 1);
  return name === undefined ? keys.match(b, start + 1, end - 1, hash) : keys.indexOf(name);
}

/**
 * Enters the object at the cursor and moves to its first member that `keys` names, stepping over
 * the others: that member's index, with the cursor at its value; -1 (past the object) when none
 * is left. {@link nextKept} continues after the member's value has been read.
 */
export function firstKept(keys: KeySet): number {
  const table = tableFor(keys);
  return table >= 0 ? seek(keys, table, true) : keptHere(keys, true);
}

/** After the value of a member {@link firstKept} or this found: the next member `keys` names, or -1 past the object. */
export function nextKept(keys: KeySet): number {
  const table = tableFor(keys);
  return table >= 0 ? seek(keys, table, false) : keptHere(keys, false);
}

/** The key table to match `keys` in the WebAssembly scanner with, or -1 to match them here. */
function tableFor(keys: KeySet): number {
  return loaded ? keys.table : -1;
}

/** {@link firstKept} (`first`) or {@link nextKept} with keys matched and dropped members stepped over here, in JavaScript. */
function keptHere(keys: KeySet, first: boolean): number {
  return (first ? openObject() : nextMember()) ? kept(keys) : -1;
}

/** From a key: the first member from here on that `keys` names (see {@link firstKept}). */
function kept(keys: KeySet): number {
  do {
    const index = key(keys);
    if (index >= 0) return index;
    skip();
  } while (nextMember());
  return -1;
}

/** {@link firstKept} and {@link nextKept} in the WebAssembly scanner: keys matched and dropped members stepped over there. */
function seek(keys: KeySet, table: number, first: boolean): number {
  const found = memberLoaded(at, table, first);
  if (found === FAIL) notProven();
  // Members longer than the loaded window of an over-limit frame: this step here.
  if (found === OUT_OF_WINDOW) return keptHere(keys, first);
  at = found;
  const index = memberFound();
  if (index >= 0) return index;
  if (index === MEMBER_END) return -1;
  // A key written with an escape, at the cursor: read here, as the JavaScript path reads every key.
  return kept(keys);
}

/**
 * Reads a `map[string]string` as the view's `stringMap` does: `null` as the shared frozen `{}`,
 * values interned, the map itself shared when equal to one read before (see `share.ts`). Members
 * are assigned in order, so a repeated key keeps its first place and its last value, as `JSON.parse` does.
 */
export function stringMap(): Readonly<Record<string, string>> {
  if (isNull()) return EMPTY_STRING_MAP;
  let count = 0;
  let hash = 0;
  if (openObject()) {
    do {
      const name = sharedStr();
      hash = mix(hash, sharedHash);
      // A literal `__proto__` member would set the prototype here, not a key: the exact path decides.
      if (name === '__proto__' || bytes[at] !== COLON) notProven();
      at = skipWs(bytes, at + 1);
      mapParts[count++] = name;
      mapParts[count++] = sharedStr();
      hash = mix(hash, sharedHash);
    } while (nextMember());
  }
  const held = maps.get(hash, mapParts, count);
  if (held !== undefined) return held;
  const map: Record<string, string> = {};
  for (let i = 0; i < count; i += 2) map[mapParts[i]!] = mapParts[i + 1]!;
  // Frozen exactly when the exact path would share it (too large a map is compacted instead).
  if (!isShareableStringMap(map)) return compactView(map);
  Object.freeze(map);
  return maps.offer(hash, mapParts, count, map);
}

/** The keys and values of the map being read (reused: one map is read at a time). */
const mapParts: string[] = [];
/** Shared maps by their keys and values. */
const maps = new PartsCache<Readonly<Record<string, string>>>(4096);
