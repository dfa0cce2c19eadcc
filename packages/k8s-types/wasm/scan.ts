// AssemblyScript, compiled by scripts/build-wasm.mjs into src/decode/scan-wasm.generated.ts.
//
// Two steps of a byte reader (src/decode/cursor.ts), moved here because they touch most of a frame's
// bytes and build nothing: stepping over a value the view drops (`skip`, scan.ts's strict
// `skipValue` with strings read 16 bytes at a time by WebAssembly SIMD), and finding the next
// member of an object that the view reads (`member`, the cursor's key matching and skipping loop).
// Both keep scan.ts's invariant, and the property tests hold them equal to the JavaScript path on
// every input: a position returned is past exactly one valid JSON value (or member list); -1 means
// "not proven" and the caller reads the frame the exact way.
//
// Memory: key tables in [0, FRAME) (written by the caller, see wasm-scan.ts), the frame at FRAME,
// followed by at least 16 zero bytes. A zero byte cannot continue a string (it is a control
// character), a number or a literal, so no read runs further than one 16-byte load past the frame,
// and a value that would need bytes past it fails. Positions are relative to the frame.

/** The string cache: a length per slot (-1: empty), then 64 bytes per slot. */
const SLOTS: i32 = 4096;
const SLOT_BYTES: i32 = 64;
const LENGTHS: usize = 16384;
const POOL: usize = LENGTHS + <usize>(SLOTS * 4);
const FRAME: usize = POOL + <usize>(SLOTS * SLOT_BYTES);
/** Where `member` writes what it found (a member's index, or one of the kinds below), and `shared` its answer. */
const FOUND: usize = 0;
/** Where `shared` writes the string's hash. */
const HASH: usize = 4;
/** `shared`: the string is longer than a slot (plain ASCII, no escape). */
const LONG: i32 = -5000;
/** `shared`: the string holds an escape or a byte of 0x80 or above: the caller decodes it. */
const DECODE: i32 = -5001;
/** `member` reached the end of the object: the position returned is past its `}` (and whitespace). */
const END: i32 = -3;
/** `member` stopped at a key written with an escape: the caller reads that key itself. */
const ESCAPED_KEY: i32 = -2;

const QUOTE: i32 = 0x22;
const BACKSLASH: i32 = 0x5c;
const FAIL: i32 = -1;
const MAX_DEPTH: i32 = 256;

@inline function at(i: i32): i32 {
  return <i32>load<u8>(<usize>i, FRAME);
}

@inline function isHex(c: i32): bool {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);
}

@inline function ws(i: i32): i32 {
  let c = at(i);
  while (c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09) c = at(++i);
  return i;
}

/** With a backslash at `k`: past the escape it starts, or FAIL. */
function escape(k: i32): i32 {
  const e = at(k + 1);
  if (e == 0x75) return isHex(at(k + 2)) && isHex(at(k + 3)) && isHex(at(k + 4)) && isHex(at(k + 5)) ? k + 6 : FAIL;
  return e == QUOTE || e == BACKSLASH || e == 0x2f || e == 0x62 || e == 0x66 || e == 0x6e || e == 0x72 || e == 0x74 ? k + 2 : FAIL;
}

function skipString(i: i32): i32 {
  let k = i + 1;
  const q = i8x16.splat(0x22);
  const bs = i8x16.splat(0x5c);
  const ctl = i8x16.splat(0x20);
  while (true) {
    const v = v128.load(<usize>k, FRAME);
    const m = i8x16.bitmask(v128.or(v128.or(i8x16.eq(v, q), i8x16.eq(v, bs)), i8x16.lt_u(v, ctl)));
    if (m == 0) {
      k += 16;
      continue;
    }
    k += ctz(m);
    const c = at(k);
    if (c == QUOTE) return k + 1;
    if (c != BACKSLASH) return FAIL;
    k = escape(k);
    if (k == FAIL) return FAIL;
  }
}

@inline function isDigit(c: i32): bool {
  return c >= 0x30 && c <= 0x39;
}

function skipNumber(i: i32): i32 {
  let c = at(i);
  if (c == 0x2d) c = at(++i);
  if (c == 0x30) c = at(++i);
  else if (isDigit(c)) {
    do c = at(++i);
    while (isDigit(c));
  } else return FAIL;
  if (c == 0x2e) {
    c = at(++i);
    if (!isDigit(c)) return FAIL;
    do c = at(++i);
    while (isDigit(c));
  }
  if (c == 0x65 || c == 0x45) {
    c = at(++i);
    if (c == 0x2b || c == 0x2d) c = at(++i);
    if (!isDigit(c)) return FAIL;
    do c = at(++i);
    while (isDigit(c));
  }
  return i;
}

function value(i: i32, depth: i32): i32 {
  const c = at(i);
  if (c == QUOTE) return skipString(i);
  if (c == 0x7b) {
    if (depth >= MAX_DEPTH) return FAIL;
    i = ws(i + 1);
    if (at(i) == 0x7d) return i + 1;
    while (true) {
      if (at(i) != QUOTE) return FAIL;
      i = skipString(i);
      if (i == FAIL) return FAIL;
      i = ws(i);
      if (at(i) != 0x3a) return FAIL;
      i = ws(i + 1);
      // `{}` is most of what a skip steps over (every leaf of managedFields' fieldsV1).
      if (<i32>load<u16>(<usize>i, FRAME) == 0x7d7b) i += 2;
      else {
        i = value(i, depth + 1);
        if (i == FAIL) return FAIL;
      }
      i = ws(i);
      const d = at(i);
      if (d == 0x7d) return i + 1;
      if (d != 0x2c) return FAIL;
      i = ws(i + 1);
    }
  }
  if (c == 0x5b) {
    if (depth >= MAX_DEPTH) return FAIL;
    i = ws(i + 1);
    if (at(i) == 0x5d) return i + 1;
    while (true) {
      i = value(i, depth + 1);
      if (i == FAIL) return FAIL;
      i = ws(i);
      const d = at(i);
      if (d == 0x5d) return i + 1;
      if (d != 0x2c) return FAIL;
      i = ws(i + 1);
    }
  }
  if (c == 0x74) return load<u32>(<usize>i, FRAME) == 0x65757274 ? i + 4 : FAIL; // true
  if (c == 0x66) return load<u32>(<usize>i + 1, FRAME) == 0x65736c61 ? i + 5 : FAIL; // (f)alse
  if (c == 0x6e) return load<u32>(<usize>i, FRAME) == 0x6c6c756e ? i + 4 : FAIL; // null
  return skipNumber(i);
}

/** With the frame `len` bytes long: the position past the value at `i`, or -1. */
export function skip(i: i32, len: i32): i32 {
  const j = value(i, 0);
  return j > len ? FAIL : j;
}

/** Set by `plainEnd`: the string held a byte of 0x80 or above. */
let sawHigh: i32 = 0;

/**
 * From `k` (inside a string): the position of its closing quote when no escape comes first, else
 * the position of the first backslash, or FAIL at a control character (a zero past the frame is
 * one). Sets `sawHigh` when a byte before that position is 0x80 or above. 16 bytes at a time.
 */
function plainEnd(k: i32): i32 {
  const q = i8x16.splat(0x22);
  const bs = i8x16.splat(0x5c);
  const ctl = i8x16.splat(0x20);
  let high: i32 = 0;
  while (true) {
    const v = v128.load(<usize>k, FRAME);
    const m = i8x16.bitmask(v128.or(v128.or(i8x16.eq(v, q), i8x16.eq(v, bs)), i8x16.lt_u(v, ctl)));
    if (m == 0) {
      high |= i8x16.bitmask(v);
      k += 16;
      continue;
    }
    const p = ctz(m);
    high |= i8x16.bitmask(v) & ((1 << p) - 1);
    sawHigh = high;
    k += p;
    const c = at(k);
    return c == QUOTE || c == BACKSLASH ? k : FAIL;
  }
}

/**
 * A hash of the bytes [start, start + length), four at a time (wasm-scan.ts computes the same for
 * key names: keep the two equal).
 */
function wordHash(start: i32, length: i32): i32 {
  let h: i32 = length;
  let n = 0;
  for (; n + 4 <= length; n += 4) h = (rotl<i32>(h, 5) ^ load<i32>(<usize>(start + n), FRAME)) * -1640531535; // 0x9e3779b1
  if (n < length) {
    let w: i32 = 0;
    for (let b = 0; n + b < length; b++) w |= at(start + n + b) << (b << 3);
    h = (rotl<i32>(h, 5) ^ w) * -1640531535; // 0x9e3779b1
  }
  // murmur3's finalizer: every input bit reaches the low bits a table indexes by.
  h = (h ^ (h >>> 16)) * -2048144789; // 0x85ebca6b
  h = (h ^ (h >>> 13)) * -1028477387; // 0xc2b2ae35
  return h ^ (h >>> 16);
}

/**
 * The index in the key table at `table` of the name `[start, end)` spells, or -1. A table (see
 * keyTable in wasm-scan.ts): i32 mask, then mask + 1 slots (a name's index, or -1; a name sits at
 * the first free slot from its hash on, and the table is at most half full), then per name an i32
 * offset of its bytes and an i32 length.
 */
function lookup(table: usize, hash: i32, start: i32, end: i32): i32 {
  const mask = load<i32>(table);
  const names = table + 4 + ((<usize>(mask + 1)) << 2);
  const length = end - start;
  let slot = hash & mask;
  while (true) {
    const index = load<i32>(table + 4 + ((<usize>slot) << 2));
    if (index < 0) return -1;
    const entry = names + ((<usize>index) << 3);
    if (load<i32>(entry + 4) == length) {
      const name = <usize>load<i32>(entry);
      let k = 0;
      while (k < length && <i32>load<u8>(name + <usize>k) == at(start + k)) k++;
      if (k == length) return index;
    }
    slot = (slot + 1) & mask;
  }
}

/**
 * The next member of an object that the key table at `table` names, stepping over the others.
 * `first`: `i` is at the object's `{`; otherwise just past a member's value (and its whitespace).
 * Returns the position of the found member's value, its index written at FOUND; or, with END at
 * FOUND, the position past the object; or, with ESCAPED_KEY at FOUND, the position of a key
 * written with an escape (for the caller to read); or -1 for bytes that are not (provably) valid.
 */
export function member(i: i32, table: i32, first: i32): i32 {
  if (first != 0) {
    if (at(i) != 0x7b) return FAIL;
    i = ws(i + 1);
    if (at(i) == 0x7d) {
      store<i32>(FOUND, END);
      return ws(i + 1);
    }
  } else {
    const c = at(i);
    if (c == 0x7d) {
      store<i32>(FOUND, END);
      return ws(i + 1);
    }
    if (c != 0x2c) return FAIL;
    i = ws(i + 1);
  }
  while (true) {
    if (at(i) != QUOTE) return FAIL;
    const start = i + 1;
    const k = plainEnd(start);
    if (k == FAIL) return FAIL;
    if (at(k) == BACKSLASH) {
      store<i32>(FOUND, ESCAPED_KEY);
      return i;
    }
    const hash = wordHash(start, k - start);
    let j = ws(k + 1);
    if (at(j) != 0x3a) return FAIL;
    j = ws(j + 1);
    const index = lookup(<usize>table, hash, start, k);
    if (index >= 0) {
      store<i32>(FOUND, index);
      return j;
    }
    j = value(j, 0);
    if (j == FAIL) return FAIL;
    j = ws(j);
    const d = at(j);
    if (d == 0x7d) {
      store<i32>(FOUND, END);
      return ws(j + 1);
    }
    if (d != 0x2c) return FAIL;
    i = ws(j + 1);
  }
}

/**
 * Reads the string at `i` (at its opening quote) for the cursor's string cache, keyed by its bytes:
 * returns the position past its closing quote, or -1 when it is not a valid string. At HASH: its
 * hash (`wordHash`; not written for DECODE). At FOUND: the slot whose cached bytes
 * equal it (a hit); or `-1 - slot` for a miss, the slot now holding its bytes (the caller puts the
 * string there); or LONG, or DECODE.
 */
export function shared(i: i32): i32 {
  const start = i + 1;
  let k = plainEnd(start);
  if (k == FAIL) return FAIL;
  if (at(k) == BACKSLASH) {
    // Escapes: checked here as skipString checks them; the caller decodes the string.
    k = skipString(i);
    if (k == FAIL) return FAIL;
    store<i32>(FOUND, DECODE);
    return k;
  }
  const length = k - start;
  const hash = wordHash(start, length);
  store<i32>(HASH, hash);
  if (sawHigh != 0) {
    store<i32>(FOUND, DECODE);
    return k + 1;
  }
  if (length > SLOT_BYTES) {
    store<i32>(FOUND, LONG);
    return k + 1;
  }
  const slot = hash & (SLOTS - 1);
  const bytes = POOL + <usize>(slot * SLOT_BYTES);
  const from = FRAME + <usize>start;
  if (load<i32>(LENGTHS + (<usize>slot << 2)) == length) {
    let same = true;
    let n = 0;
    for (; n + 8 <= length; n += 8) {
      if (load<u64>(bytes + <usize>n) != load<u64>(from + <usize>n)) {
        same = false;
        break;
      }
    }
    if (same) {
      for (; n < length; n++) {
        if (load<u8>(bytes + <usize>n) != load<u8>(from + <usize>n)) {
          same = false;
          break;
        }
      }
    }
    if (same) {
      store<i32>(FOUND, slot);
      return k + 1;
    }
  }
  memory.copy(bytes, from, <usize>length);
  store<i32>(LENGTHS + (<usize>slot << 2), length);
  store<i32>(FOUND, -1 - slot);
  return k + 1;
}
