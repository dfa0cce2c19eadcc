import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FAIL, MAX_DEPTH, skipValue } from '../src/decode/scan.js';
import { begin, end, firstKept, KeySet, nextKept, NOT_PROVEN, position, skip } from '../src/decode/cursor.js';
import {
  keyTable,
  loadFrame,
  skipLoaded,
  unloadFrame,
  useWasmScan,
  WASM_FRAME_LIMIT,
  wasmScanAvailable,
  wasmWindow,
} from '../src/decode/wasm-scan.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Both skips of the value at `start` of `bytes`. */
function both(bytes: Uint8Array, start: number): [number, number] {
  expect(loadFrame(bytes)).toBe(true);
  return [skipLoaded(start), skipValue(bytes, start)];
}

/** Bytes that decide a scanner's path: structure, escapes, control characters, number and literal starts. */
const pivotal = fc.constantFrom(
  ...'"\\{}[],: \t\n\r\u0000\u001fu0123456789-+.eEtrufalsn/bx'.split('').map((c) => c.charCodeAt(0)),
  0x80,
  0xff,
);

/** `null` three times in four. */
const rarely = <T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | null> =>
  fc.oneof({ arbitrary: fc.constant(null), weight: 3 }, { arbitrary, weight: 1 });

/** JSON text, as written compactly or spaced, then damaged: cut short, or bytes overwritten. */
const damaged = fc
  .tuple(
    fc.json({ depthSize: 'medium' }),
    fc.boolean(),
    fc.array(fc.tuple(fc.nat(), pivotal), { maxLength: 3 }),
    fc.option(fc.nat()),
  )
  .map(([text, spaced, edits, cut]) => {
    const bytes = Buffer.from(spaced ? JSON.stringify(JSON.parse(text), null, 1) : text, 'utf8');
    for (const [at, byte] of edits) if (bytes.length > 0) bytes[at % bytes.length] = byte;
    return cut === null ? bytes : bytes.subarray(0, cut % (bytes.length + 1));
  });

describe('the WebAssembly scanner (wasm/scan.ts)', () => {
  it('[k8s_types: wasm skip] is in use on this runtime', () => {
    expect(wasmScanAvailable()).toBe(true);
  });

  it('[k8s_types: wasm skip] answers exactly as scan.ts does, on valid JSON and on every damaged or truncated variant of it', () => {
    let accepted = 0;
    fc.assert(
      fc.property(damaged, fc.constantFrom('', 'x', '  ', '{"a":'), (value, prefix) => {
        const bytes = Buffer.concat([Buffer.from(prefix), value]);
        const [wasm, js] = both(bytes, prefix.length);
        expect(wasm).toBe(js);
        if (js !== FAIL) accepted++;
      }),
      { numRuns: 3000 },
    );
    // Not vacuous: hundreds of the inputs are values, and more are not.
    expect(accepted).toBeGreaterThan(300);
  });

  it('[k8s_types: wasm skip] never reads a value past the frame: what continues beyond the loaded bytes does not count', () => {
    for (const text of ['"abc"', '123', 'true', '{"a":[1,2]}', '"\\u00e9"']) {
      const whole = Buffer.from(text);
      for (let cut = 0; cut < whole.length; cut++) {
        // The cut frame is loaded into memory that still held the whole value from the last load.
        loadFrame(whole);
        const [wasm, js] = both(whole.subarray(0, cut), 0);
        expect([text, cut, wasm]).toEqual([text, cut, js]);
      }
      expect(both(whole, 0)).toEqual([whole.length, whole.length]);
    }
    // A number at the very end of a frame ends there.
    expect(both(Buffer.from('[0,12'), 3)).toEqual([5, 5]);
  });

  it('[k8s_types: wasm skip] gives up past the same nesting depth, and spans long strings and escapes', () => {
    for (const depth of [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 2000]) {
      const nested = Buffer.from('['.repeat(depth) + ']'.repeat(depth));
      const [wasm, js] = both(nested, 0);
      expect(wasm).toBe(js);
    }
    const long = Buffer.from(JSON.stringify({ s: 'é\\"\u0001'.repeat(5000) + 'x'.repeat(70_000) }));
    expect(both(long, 0)).toEqual([long.length, long.length]);
  });

  it('[k8s_types: wasm skip] grows its memory for a frame under its limit, and reads one over it through windows of the limit', () => {
    const big = Buffer.from(JSON.stringify(['x'.repeat(3_000_000)]));
    expect(both(big, 0)).toEqual([big.length, big.length]);
    // Two values, each under the limit, together over it: the second is read in a second window.
    const half = 'y'.repeat(WASM_FRAME_LIMIT / 2 + 10);
    const over = Buffer.from(JSON.stringify([half, 12345, half, { a: half }]));
    expect(over.length).toBeGreaterThan(WASM_FRAME_LIMIT);
    expect(loadFrame(over)).toBe(true);
    let i = 1;
    const ends: number[] = [];
    for (let k = 0; k < 4; k++) {
      const wasm = skipLoaded(i);
      expect(wasm).toBe(skipValue(over, i));
      ends.push(wasm);
      i = wasm + 1;
    }
    expect(ends.at(-1)).toBe(over.length - 1);
    // Back before the window (a reader restarting at a value read before), and the whole frame: one value longer than a window.
    expect(skipLoaded(1)).toBe(ends[0]);
    expect(skipLoaded(0)).toBe(over.length);
    unloadFrame();
  });

  it('[k8s_types: wasm skip] through windows of any size, skips answer exactly as scan.ts does, wherever a window ends', () => {
    const windows = fc.integer({ min: 1, max: 48 });
    try {
      fc.assert(
        fc.property(damaged, windows, fc.nat(), (value, window, from) => {
          wasmWindow(window);
          const bytes = Buffer.concat([Buffer.from('[0,'), value, Buffer.from(',"tail"]')]);
          loadFrame(bytes);
          // Every value from the cursor's positions, in order, then one from an earlier position.
          const start = 3;
          expect(skipLoaded(start)).toBe(skipValue(bytes, start));
          expect(skipLoaded(0)).toBe(skipValue(bytes, 0));
          const at = from % bytes.length;
          expect(skipLoaded(at)).toBe(skipValue(bytes, at));
          unloadFrame();
        }),
        { numRuns: 2000 },
      );
    } finally {
      wasmWindow(WASM_FRAME_LIMIT);
    }
  });

  it('[k8s_types: wasm skip] finds the members a view reads, stepping over the rest, exactly as the JavaScript cursor does', () => {
    // What a reader sees of one object: the kept members' indexes and where each value starts, and
    // where the object ends; or that it was not proven.
    const walk = (bytes: Uint8Array, keys: KeySet): unknown => {
      const seen: number[] = [];
      begin(bytes);
      try {
        for (let index = firstKept(keys); index >= 0; index = nextKept(keys)) {
          seen.push(index, position());
          skip();
        }
        return [...seen, position()];
      } catch (error) {
        if (error === NOT_PROVEN) return 'not proven';
        throw error;
      } finally {
        end();
      }
    };
    const name = fc.constantFrom('a', 'b', 'name', 'uid', 'status', 'x\u0041', 'n"q', '', 'é');
    const object = fc
      .tuple(
        fc.array(fc.tuple(name, fc.json({ maxDepth: 2 })), { maxLength: 6 }),
        fc.boolean(),
        rarely(fc.tuple(fc.nat(), pivotal)),
        rarely(fc.nat()),
      )
      .map(([members, spaced, edit, cut]) => {
        const sp = spaced ? ' ' : '';
        const bytes = Buffer.from(`{${sp}${members.map(([k, v]) => `"${k}"${sp}:${sp}${v}`).join(`,${sp}`)}${sp}}`, 'utf8');
        if (edit !== null && bytes.length > 0) bytes[edit[0] % bytes.length] = edit[1];
        return cut === null ? bytes : bytes.subarray(0, cut % (bytes.length + 1));
      });
    const sets = [new KeySet(['a', 'name']), new KeySet(['uid', 'status', 'b', 'xA']), new KeySet(['n"q'])];
    let kept = 0;
    // A window under the frame's size loads the frame a window at a time: the answers are the same.
    const windows = fc.oneof(fc.constant(WASM_FRAME_LIMIT), fc.integer({ min: 1, max: 40 }));
    try {
      fc.assert(
        fc.property(object, fc.constantFrom(...sets), windows, (bytes, keys, window) => {
          useWasmScan(true);
          wasmWindow(window);
          const wasm = walk(bytes, keys);
          useWasmScan(false);
          const js = walk(bytes, keys);
          useWasmScan(true);
          expect(wasm).toEqual(js);
          if (Array.isArray(js) && js.length > 1) kept++;
        }),
        { numRuns: 4000 },
      );
    } finally {
      wasmWindow(WASM_FRAME_LIMIT);
    }
    expect(kept).toBeGreaterThan(300);
    // The sets were read through their tables in the module (not the JavaScript fallback).
    for (const keys of sets) expect(keys.table).toBeGreaterThan(0);
  });

  it('[k8s_types: wasm skip] a key set with no room left for its table is matched in JavaScript', () => {
    const names = Array.from({ length: 12 }, (_, i) => `member-number-${i}`);
    const tables: number[] = [];
    while (tables.length < 10_000 && tables.at(-1) !== -1) tables.push(keyTable(names));
    expect(tables.at(-1)).toBe(-1);
    expect(tables.length).toBeGreaterThan(3);
    expect(tables[0]).toBeGreaterThan(0);
    // Fill what is left with tables the size of the next key set's: made now, it gets none, and
    // still finds its members in a frame the module holds.
    let filled = 0;
    while (filled < 10_000 && keyTable(['b', 'late']) !== -1) filled++;
    const late = new KeySet(['b', 'late']);
    const bytes = Buffer.from('{"a":[1,{"b":2}],"late":"x","b":true}');
    begin(bytes);
    try {
      expect(late.table).toBe(-1);
      const found: number[] = [];
      for (let index = firstKept(late); index >= 0; index = nextKept(late)) {
        found.push(index);
        skip();
      }
      expect(found).toEqual([1, 0]);
      expect(position()).toBe(bytes.length);
    } finally {
      end();
    }
  });

  it('[k8s_types: wasm skip built from source] the committed module is what wasm/skip.ts compiles to', () => {
    // Exits non-zero (and the call throws) when src/decode/scan-wasm.generated.ts is stale.
    execFileSync(process.execPath, [join(root, 'scripts', 'build-wasm.mjs'), '--check'], { stdio: 'pipe' });
  }, 60_000);
});
