import { FAIL, skipValue } from './scan.js';
import { SCAN_WASM } from './scan-wasm.generated.js';

/**
 * The WebAssembly half of the byte reader (`wasm/scan.ts`): the steps that touch most of a frame's
 * bytes and build nothing. {@link skipLoaded} is `scan.ts`'s strict skip with strings read 16 bytes
 * at a time, for the members a view drops (`managedFields`, most of `spec`: most of the bytes);
 * {@link memberLoaded} finds an object's next member that a view reads, matching keys and stepping
 * over the rest without returning to JavaScript; {@link sharedLoaded} finds a shared string again by
 * its bytes in a cache the module keeps. A frame is copied into the module's memory once.
 * A frame larger than {@link WASM_FRAME_LIMIT} (an unpaged LIST) is loaded a window at a time (see
 * {@link loadFrame}). Where WebAssembly is unavailable (`--jitless`) the cursor does all of it in
 * JavaScript: the same answers (property-tested), slower.
 *
 * One frame is loaded at a time, synchronously, as the cursor reads one (module state).
 */

/**
 * Frames larger than this are loaded a window of this size at a time. WebAssembly memory never
 * shrinks: this bounds what the module keeps after the largest frame it saw (a LIST page of 250
 * pods is ≈ 1.2 MB; an unpaged LIST of 5,000, 25 MB).
 */
export const WASM_FRAME_LIMIT = 4 * 1024 * 1024;

/**
 * Returned by {@link memberLoaded} and {@link sharedLoaded} for a step the loaded window cannot
 * decide (its bytes run past the window even when the window starts at them): the caller takes
 * that step in JavaScript.
 */
export const OUT_OF_WINDOW = -7;

/** The module's memory map (its `LENGTHS`, `POOL` and `FRAME`): key tables, the string cache's lengths and bytes, the frame. */
const LENGTHS = 16_384;
const SLOTS = 4096;
const POOL = LENGTHS + SLOTS * 4;
const FRAME = POOL + SLOTS * 64;
/** Where the first key table starts: the module writes what {@link memberLoaded} found at 0. */
const TABLES = 16;
/** Zero bytes after a loaded frame: one 16-byte load past its end never leaves the memory, and a zero stops every token. */
const PAD = 32;
const PAGE = 65_536;

/** What {@link memberLoaded} found, besides a member's index (the module's `END` and `ESCAPED_KEY`). */
export const MEMBER_END = -3;
export const MEMBER_ESCAPED_KEY = -2;
/** What {@link sharedLoaded} found, besides a slot (the module's `LONG` and `DECODE`). */
export const SHARED_LONG = -5000;
export const SHARED_DECODE = -5001;

/** The part of the WebAssembly API used here (the package builds without the DOM typings). */
interface WasmApi {
  readonly Module: new (bytes: Uint8Array) => object;
  readonly Instance: new (module: object, imports: object) => { readonly exports: object };
}
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface Module {
  readonly skip: (i: number, length: number) => number;
  readonly member: (i: number, table: number, first: number) => number;
  readonly shared: (i: number) => number;
  readonly memory: WasmMemory;
}

let module: Module | null | undefined;
let enabled = true;
let memoryBytes = new Uint8Array(0);
let memoryWords = new Int32Array(0);
let loadedLength = 0;
let nextTable = TABLES;
let windowBytes = WASM_FRAME_LIMIT;
/**
 * An over-limit frame, kept (while it is read) to load its windows from; EMPTY for a frame loaded
 * whole. Its bytes [base, windowEnd) are at FRAME, and `partial` holds exactly when the frame goes
 * on past windowEnd. An answer is trusted only when the module decided it on loaded bytes: a
 * position before windowEnd, or any answer when nothing follows the window (a number cut at the
 * window's end would read as ending there).
 */
const EMPTY = new Uint8Array(0);
let frame: Uint8Array = EMPTY;
let base = 0;
let windowEnd = 0;
let partial = false;

/** The module, instantiated on first use; `null` where it cannot be. */
function ready(): Module | null {
  if (module === undefined) module = instantiate();
  return module;
}

function instantiate(): Module | null {
  const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (wasm === undefined) return null; // `--jitless`
  try {
    const instance = new wasm.Instance(new wasm.Module(Buffer.from(SCAN_WASM, 'base64')), {});
    const { skip, member, shared, memory } = instance.exports as Module;
    const m = { skip, member, shared, memory };
    m.memory.grow(Math.ceil((FRAME + PAGE - m.memory.buffer.byteLength) / PAGE));
    views(m);
    memoryWords.fill(-1, LENGTHS >> 2, POOL >> 2); // every string cache slot empty
    return m;
  } catch {
    // A runtime without WebAssembly SIMD: the cursor reads everything in JavaScript.
    return null;
  }
}

/** (Re)makes the typed views on the module's memory (growing it detaches them). */
function views(m: Module): void {
  memoryBytes = new Uint8Array(m.memory.buffer);
  memoryWords = new Int32Array(m.memory.buffer);
}

/**
 * Copies `frame` into the module's memory for {@link skipLoaded}, {@link memberLoaded} and
 * {@link sharedLoaded}: all of it, or when it is over {@link WASM_FRAME_LIMIT} its first window
 * (the next is loaded from wherever a step first needs bytes past it). `false` (nothing loaded)
 * when the module is unavailable or turned off, or has no memory for it.
 */
export function loadFrame(bytes: Uint8Array): boolean {
  if (!enabled || ready() === null) return false;
  if (bytes.length <= windowBytes) {
    frame = EMPTY;
    return load(bytes, 0, bytes.length);
  }
  frame = bytes;
  if (load(bytes, 0, windowBytes)) return true;
  frame = EMPTY;
  return false;
}

/** Lets go of an over-limit frame {@link loadFrame} kept for its windows. */
export function unloadFrame(): void {
  frame = EMPTY;
  partial = false;
}

/** Copies `bytes[from, from + length)` to FRAME, growing the memory when it must. */
function load(bytes: Uint8Array, from: number, length: number): boolean {
  const m = module!;
  const need = FRAME + length + PAD;
  if (memoryBytes.length < need) {
    const have = m.memory.buffer.byteLength;
    try {
      if (have < need) m.memory.grow(Math.ceil((need - have) / PAGE));
    } catch {
      return false; // no memory for it: this frame is read in JavaScript
    }
    views(m);
  }
  memoryBytes.set(from === 0 && length === bytes.length ? bytes : bytes.subarray(from, from + length), FRAME);
  memoryBytes.fill(0, FRAME + length, need);
  loadedLength = length;
  base = from;
  windowEnd = from + length;
  partial = windowEnd < bytes.length;
  return true;
}

/**
 * Loads the window of the over-limit frame that starts at `i`, for a step that could not be
 * decided in the window loaded before; `false` when the window already starts there (the step's
 * bytes are longer than a window: the caller takes it in JavaScript) or cannot be loaded.
 */
function slide(i: number): boolean {
  return i !== base && load(frame, i, Math.min(windowBytes, frame.length - i));
}

/** The module's three steps, for {@link windowed}. */
const SKIP = 0;
const MEMBER = 1;
const SHARED = 2;

/**
 * Step `op` from frame position `i` of an over-limit frame, in the window holding it: the answer
 * (a frame position) once the module decided it on loaded bytes, {@link FAIL} when the window
 * reaching the frame's end refuses it, or {@link OUT_OF_WINDOW} when even a window starting at `i`
 * cannot decide it. A string ends at a quote the module read, so a `shared` end is decided wherever
 * it falls; a skip or a member search ending at the window's end may have stopped at the padding.
 */
function windowed(op: number, i: number, table = 0, first = 0): number {
  const m = module!;
  for (;;) {
    if (i >= base && i < windowEnd) {
      const at = i - base;
      const end = op === SKIP ? m.skip(at, loadedLength) : op === MEMBER ? m.member(at, table, first) : m.shared(at);
      if (end >= 0 && (op === SHARED || !partial || end + base < windowEnd)) return end + base;
      if (!partial) return FAIL;
    }
    if (!slide(i)) return OUT_OF_WINDOW;
  }
}

/** `skipValue(frame, i)` of `scan.ts`, for the frame {@link loadFrame} loaded last. */
export function skipLoaded(i: number): number {
  if (frame === EMPTY) {
    const end = module!.skip(i, loadedLength);
    return end < 0 ? FAIL : end;
  }
  const end = windowed(SKIP, i);
  return end === OUT_OF_WINDOW ? skipValue(frame, i) : end;
}

/**
 * In the frame loaded last, from `i` (at the object's `{` when `first`, else just past a member's
 * value and its whitespace): the position of the next member's value whose key `table` names,
 * stepping over the others; {@link memberFound} then tells which (or {@link MEMBER_END}: the
 * position is past the object and its whitespace; or {@link MEMBER_ESCAPED_KEY}: the position is a
 * key written with an escape, for the caller to read). {@link FAIL} for bytes not (provably) valid;
 * {@link OUT_OF_WINDOW} for a step over more bytes than a window holds.
 */
export function memberLoaded(i: number, table: number, first: boolean): number {
  if (frame === EMPTY) {
    const at = module!.member(i, table, first ? 1 : 0);
    return at < 0 ? FAIL : at;
  }
  return windowed(MEMBER, i, table, first ? 1 : 0);
}

/**
 * Reads the string at `i` (its opening quote) in the frame loaded last, for the cursor's string
 * cache: the position past it, or {@link FAIL}, or {@link OUT_OF_WINDOW}. {@link memberFound} then gives the cache slot
 * whose bytes equal it (a hit: the string put there before is this one), or `-1 - slot` (a miss:
 * the slot now holds these bytes, and the caller must put this string there), or
 * {@link SHARED_LONG} (over 64 bytes: not cached), or {@link SHARED_DECODE} (an escape or
 * non-ASCII: the caller decodes it); {@link foundHash} its hash.
 */
export function sharedLoaded(i: number): number {
  if (frame === EMPTY) {
    const end = module!.shared(i);
    return end < 0 ? FAIL : end;
  }
  return windowed(SHARED, i);
}

/** The hash {@link sharedLoaded} wrote: equal bytes, equal hashes. */
export function foundHash(): number {
  return memoryWords[1]!;
}

/** What the last {@link memberLoaded} found: a member's index, {@link MEMBER_END} or {@link MEMBER_ESCAPED_KEY}. */
export function memberFound(): number {
  return memoryWords[0]!;
}

/**
 * The module's `wordHash` of an ASCII name: equal to what it computes for the name's bytes in a
 * frame (four bytes at a time, little-endian), so a key table can be built here.
 */
export function wordHash(name: string): number {
  const length = name.length;
  let h = length;
  let n = 0;
  for (; n + 4 <= length; n += 4) {
    const w =
      name.charCodeAt(n) | (name.charCodeAt(n + 1) << 8) | (name.charCodeAt(n + 2) << 16) | (name.charCodeAt(n + 3) << 24);
    h = Math.imul(((h << 5) | (h >>> 27)) ^ w, 0x9e3779b1);
  }
  if (n < length) {
    let w = 0;
    for (let b = 0; n + b < length; b++) w |= name.charCodeAt(n + b) << (b * 8);
    h = Math.imul(((h << 5) | (h >>> 27)) ^ w, 0x9e3779b1);
  }
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * Writes a key table into the module's memory for {@link memberLoaded}: slots (a power of two, at
 * most half full) give a name's index at the first free slot from its {@link wordHash} on, -1 for
 * none; `names` are ASCII. Returns the table's address, or -1 when the module is unavailable or out of table space.
 */
export function keyTable(names: readonly string[]): number {
  if (ready() === null) return -1;
  // At most half full, each name at the first free slot from its hash on (the module probes the same way).
  let size = 8;
  while (size < names.length * 2) size *= 2;
  const slots = new Int32Array(size).fill(-1);
  names.forEach((name, index) => {
    let slot = wordHash(name) & (size - 1);
    while (slots[slot] !== -1) slot = (slot + 1) & (size - 1);
    slots[slot] = index;
  });
  const bytes = 4 + slots.length * 4 + names.length * 8 + names.reduce((n, name) => n + name.length, 0);
  const table = nextTable;
  if (table + bytes > LENGTHS) return -1;
  nextTable = (table + bytes + 3) & ~3;
  memoryWords[table >> 2] = slots.length - 1;
  memoryWords.set(slots, (table >> 2) + 1);
  let entry = table + 4 + slots.length * 4;
  let name = entry + names.length * 8;
  for (const text of names) {
    memoryWords[entry >> 2] = name;
    memoryWords[(entry >> 2) + 1] = text.length;
    for (let k = 0; k < text.length; k++) memoryBytes[name + k] = text.charCodeAt(k);
    entry += 8;
    name += text.length;
  }
  return table;
}

/**
 * Turns the byte reader's WebAssembly scanner off (`false`) or back on (`true`, the default). Off,
 * the reader steps over dropped members and matches keys in JavaScript: the same frames, errors and
 * cached values, at more CPU per frame (BENCHMARKS.md (15c)). For runtimes or policies that forbid
 * WebAssembly; where it is missing (`node --jitless`) the reader already does without it.
 */
export function useWasmScan(on: boolean): void {
  enabled = on;
}

/**
 * Sets the window an over-limit frame is loaded through (default and at most
 * {@link WASM_FRAME_LIMIT}); tests make it small so that windows turn within small frames.
 */
export function wasmWindow(bytes: number): void {
  windowBytes = Math.max(1, Math.min(WASM_FRAME_LIMIT, Math.floor(bytes)));
}

/** Whether the byte reader scans in WebAssembly here: the runtime has it (with SIMD) and it is not turned off. */
export function wasmScanAvailable(): boolean {
  return enabled && ready() !== null;
}
