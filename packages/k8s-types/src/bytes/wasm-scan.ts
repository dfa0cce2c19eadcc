import { FAIL } from './scan.js';
import { SCAN_WASM } from './scan-wasm.generated.js';

/**
 * The WebAssembly half of the byte reader (`wasm/scan.ts`): the steps that touch most of a frame's
 * bytes and build nothing. {@link skipLoaded} is `scan.ts`'s strict skip with strings read 16 bytes
 * at a time, for the members a view drops (`managedFields`, most of `spec`: most of the bytes);
 * {@link memberLoaded} finds an object's next member that a view reads, matching keys and stepping
 * over the rest without returning to JavaScript. A frame is copied into the module's memory once.
 * Where WebAssembly is unavailable (`--jitless`) or a frame is larger than {@link WASM_FRAME_LIMIT},
 * the cursor does all of it in JavaScript: the same answers (property-tested), slower.
 *
 * One frame is loaded at a time, synchronously, as the cursor reads one (module state).
 */

/**
 * Frames larger than this are read in JavaScript. WebAssembly memory never shrinks: this bounds
 * what the module keeps after the largest frame it saw (a LIST page of 250 pods is ≈ 1.2 MB).
 */
export const WASM_FRAME_LIMIT = 4 * 1024 * 1024;

/** Where the frame starts in the module's memory; key tables live below it (the module's `FRAME`). */
const FRAME = 16_384;
/** Where the first key table starts: the module writes what {@link memberLoaded} found at 0. */
const TABLES = 16;
/** Zero bytes after a loaded frame: one 16-byte load past its end never leaves the memory, and a zero stops every token. */
const PAD = 32;
const PAGE = 65_536;

/** What {@link memberLoaded} found, besides a member's index (the module's `END` and `ESCAPED_KEY`). */
export const MEMBER_END = -3;
export const MEMBER_ESCAPED_KEY = -2;

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
  readonly memory: WasmMemory;
}

let module: Module | null | undefined;
let enabled = true;
let memoryBytes = new Uint8Array(0);
let memoryWords = new Int32Array(0);
let loadedLength = 0;
let nextTable = TABLES;

function instantiate(): Module | null {
  const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (wasm === undefined) return null; // `--jitless`
  try {
    const instance = new wasm.Instance(new wasm.Module(Buffer.from(SCAN_WASM, 'base64')), {});
    const { skip, member, memory } = instance.exports as Module;
    const m = { skip, member, memory };
    views(m);
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
 * Copies `frame` into the module's memory for {@link skipLoaded} and {@link memberLoaded}; `false`
 * (nothing loaded) when the module is unavailable or turned off, or the frame is over {@link WASM_FRAME_LIMIT}.
 */
export function loadFrame(frame: Uint8Array): boolean {
  if (!enabled || frame.length > WASM_FRAME_LIMIT) return false;
  if (module === undefined) module = instantiate();
  if (module === null) return false;
  const need = FRAME + frame.length + PAD;
  if (memoryBytes.length < need) {
    const have = module.memory.buffer.byteLength;
    if (have < need) module.memory.grow(Math.ceil((need - have) / PAGE));
    views(module);
  }
  memoryBytes.set(frame, FRAME);
  memoryBytes.fill(0, FRAME + frame.length, need);
  loadedLength = frame.length;
  return true;
}

/** `skipValue(frame, i)` of `scan.ts`, for the frame {@link loadFrame} loaded last. */
export function skipLoaded(i: number): number {
  const end = module!.skip(i, loadedLength);
  return end < 0 ? FAIL : end;
}

/**
 * In the frame loaded last, from `i` (at the object's `{` when `first`, else just past a member's
 * value and its whitespace): the position of the next member's value whose key `table` names,
 * stepping over the others; {@link memberFound} then tells which (or {@link MEMBER_END}: the
 * position is past the object and its whitespace; or {@link MEMBER_ESCAPED_KEY}: the position is a
 * key written with an escape, for the caller to read). {@link FAIL} for bytes not (provably) valid.
 */
export function memberLoaded(i: number, table: number, first: boolean): number {
  const at = module!.member(i, table, first ? 1 : 0);
  return at < 0 ? FAIL : at;
}

/** What the last {@link memberLoaded} found: a member's index, {@link MEMBER_END} or {@link MEMBER_ESCAPED_KEY}. */
export function memberFound(): number {
  return memoryWords[0]!;
}

/**
 * Writes a key table into the module's memory for {@link memberLoaded}: `slots` (mask + 1 of them)
 * give a name's index by its hash (`h = h * 31 + byte`, 32-bit), -1 for none; `names` are ASCII.
 * Returns the table's address, or -1 when the module is unavailable or out of table space.
 */
export function keyTable(names: readonly string[], slots: Int32Array): number {
  if (module === undefined) module = instantiate();
  if (module === null) return -1;
  const size = 4 + slots.length * 4 + names.length * 8 + names.reduce((n, name) => n + name.length, 0);
  const table = nextTable;
  if (table + size > FRAME) return -1;
  nextTable = (table + size + 3) & ~3;
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

/** Turns the WebAssembly half off or on (tests: both paths give the same answers). */
export function useWasmScan(on: boolean): void {
  enabled = on;
}

/** Whether the WebAssembly half is in use here (instantiated, not turned off). */
export function wasmScanAvailable(): boolean {
  if (module === undefined) module = instantiate();
  return enabled && module !== null;
}
