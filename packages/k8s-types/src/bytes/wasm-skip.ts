import { FAIL } from './scan.js';
import { SKIP_WASM } from './skip-wasm.generated.js';

/**
 * The strict skip of `scan.ts` compiled to WebAssembly (`wasm/skip.ts`), which steps over strings
 * 16 bytes at a time: for the members a view drops (`managedFields`, most of `spec`), which are most
 * of a frame's bytes. A frame is copied into the module's memory once, then every skip in it runs
 * there. Where WebAssembly is unavailable (`--jitless`) or a frame is larger than
 * {@link WASM_FRAME_LIMIT}, `scan.ts` steps over it instead: same answers (property-tested), slower.
 *
 * One frame is loaded at a time, synchronously, as the cursor reads one (module state).
 */

/**
 * Frames larger than this are stepped over in JavaScript. WebAssembly memory never shrinks: this
 * bounds what the module keeps after the largest frame it saw (a LIST page of 250 pods is ≈ 1.2 MB).
 */
export const WASM_FRAME_LIMIT = 4 * 1024 * 1024;

/** Zero bytes after a loaded frame: one 16-byte load past its end never leaves the memory, and a zero stops every token. */
const PAD = 32;
const PAGE = 65_536;

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
  readonly memory: WasmMemory;
}

let module: Module | null | undefined;
let enabled = true;
let memoryBytes = new Uint8Array(0);
let loadedLength = 0;

function instantiate(): Module | null {
  const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (wasm === undefined) return null; // `--jitless`
  try {
    const instance = new wasm.Instance(new wasm.Module(Buffer.from(SKIP_WASM, 'base64')), {});
    const { skip, memory } = instance.exports as Module;
    return { skip, memory };
  } catch {
    // A runtime without WebAssembly SIMD: scan.ts steps over everything.
    return null;
  }
}

/**
 * Copies `frame` into the module's memory for {@link skipLoaded}; `false` (nothing loaded) when the
 * module is unavailable or the frame is over {@link WASM_FRAME_LIMIT}.
 */
export function loadFrame(frame: Uint8Array): boolean {
  if (!enabled || frame.length > WASM_FRAME_LIMIT) return false;
  if (module === undefined) module = instantiate();
  if (module === null) return false;
  const need = frame.length + PAD;
  if (memoryBytes.length < need) {
    const have = module.memory.buffer.byteLength;
    if (have < need) module.memory.grow(Math.ceil((need - have) / PAGE));
    memoryBytes = new Uint8Array(module.memory.buffer);
  }
  memoryBytes.set(frame, 0);
  memoryBytes.fill(0, frame.length, need);
  loadedLength = frame.length;
  return true;
}

/** `skipValue(frame, i)` of `scan.ts` for the frame {@link loadFrame} loaded last. */
export function skipLoaded(i: number): number {
  const end = module!.skip(i, loadedLength);
  return end < 0 ? FAIL : end;
}

/** Turns the WebAssembly skip off or on (tests: both paths give the same answers). */
export function useWasmSkip(on: boolean): void {
  enabled = on;
}

/** Whether the WebAssembly skip is in use here (instantiated, not turned off). */
export function wasmSkipAvailable(): boolean {
  if (module === undefined) module = instantiate();
  return enabled && module !== null;
}
