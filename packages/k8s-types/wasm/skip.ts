// AssemblyScript, compiled by scripts/build-wasm.mjs into src/bytes/skip-wasm.generated.ts.
//
// The strict skip of src/bytes/scan.ts (`skipValue`), for the members a view drops, with strings
// stepped over 16 bytes at a time (WebAssembly SIMD). Its invariant is scan.ts's, and the property
// tests hold the two equal on every input: skip(i, len) === j (j >= 0) => bytes [i, j) are exactly
// one JSON value; -1 means "not proven".
//
// Memory: the frame at [0, len), followed by at least 16 zero bytes. A zero byte cannot continue a
// string (it is a control character) nor a number or a literal, so no read runs further than one
// 16-byte load past `len`, and a value that would need bytes past `len` fails.
const QUOTE: i32 = 0x22;
const BACKSLASH: i32 = 0x5c;
const FAIL: i32 = -1;
const MAX_DEPTH: i32 = 256;

@inline function isHex(c: i32): bool {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);
}

@inline function ws(i: i32): i32 {
  let c = <i32>load<u8>(i);
  while (c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09) c = <i32>load<u8>(++i);
  return i;
}

function skipString(i: i32): i32 {
  let k = i + 1;
  const q = i8x16.splat(0x22);
  const bs = i8x16.splat(0x5c);
  const ctl = i8x16.splat(0x20);
  while (true) {
    const v = v128.load(k);
    const m = i8x16.bitmask(v128.or(v128.or(i8x16.eq(v, q), i8x16.eq(v, bs)), i8x16.lt_u(v, ctl)));
    if (m == 0) { k += 16; continue; }
    k += ctz(m);
    const c = <i32>load<u8>(k);
    if (c == QUOTE) return k + 1;
    if (c != BACKSLASH) return FAIL;
    const e = <i32>load<u8>(k + 1);
    if (e == 0x75) {
      if (!(isHex(load<u8>(k + 2)) && isHex(load<u8>(k + 3)) && isHex(load<u8>(k + 4)) && isHex(load<u8>(k + 5)))) return FAIL;
      k += 6;
    } else if (e == QUOTE || e == BACKSLASH || e == 0x2f || e == 0x62 || e == 0x66 || e == 0x6e || e == 0x72 || e == 0x74) k += 2;
    else return FAIL;
  }
}

@inline function isDigit(c: i32): bool { return c >= 0x30 && c <= 0x39; }

function skipNumber(i: i32): i32 {
  let c = <i32>load<u8>(i);
  if (c == 0x2d) c = <i32>load<u8>(++i);
  if (c == 0x30) c = <i32>load<u8>(++i);
  else if (isDigit(c)) { do c = <i32>load<u8>(++i); while (isDigit(c)); }
  else return FAIL;
  if (c == 0x2e) {
    c = <i32>load<u8>(++i);
    if (!isDigit(c)) return FAIL;
    do c = <i32>load<u8>(++i); while (isDigit(c));
  }
  if (c == 0x65 || c == 0x45) {
    c = <i32>load<u8>(++i);
    if (c == 0x2b || c == 0x2d) c = <i32>load<u8>(++i);
    if (!isDigit(c)) return FAIL;
    do c = <i32>load<u8>(++i); while (isDigit(c));
  }
  return i;
}

function value(i: i32, depth: i32): i32 {
  const c = <i32>load<u8>(i);
  if (c == QUOTE) return skipString(i);
  if (c == 0x7b) {
    if (depth >= MAX_DEPTH) return FAIL;
    i = ws(i + 1);
    if (<i32>load<u8>(i) == 0x7d) return i + 1;
    while (true) {
      if (<i32>load<u8>(i) != QUOTE) return FAIL;
      i = skipString(i);
      if (i == FAIL) return FAIL;
      i = ws(i);
      if (<i32>load<u8>(i) != 0x3a) return FAIL;
      i = ws(i + 1);
      if (<i32>load<u16>(i) == 0x7d7b) i += 2;
      else {
        i = value(i, depth + 1);
        if (i == FAIL) return FAIL;
      }
      i = ws(i);
      const d = <i32>load<u8>(i);
      if (d == 0x7d) return i + 1;
      if (d != 0x2c) return FAIL;
      i = ws(i + 1);
    }
  }
  if (c == 0x5b) {
    if (depth >= MAX_DEPTH) return FAIL;
    i = ws(i + 1);
    if (<i32>load<u8>(i) == 0x5d) return i + 1;
    while (true) {
      i = value(i, depth + 1);
      if (i == FAIL) return FAIL;
      i = ws(i);
      const d = <i32>load<u8>(i);
      if (d == 0x5d) return i + 1;
      if (d != 0x2c) return FAIL;
      i = ws(i + 1);
    }
  }
  if (c == 0x74) return load<u32>(i) == 0x65757274 ? i + 4 : FAIL; // true
  if (c == 0x66) return load<u32>(i + 1) == 0x65736c61 ? i + 5 : FAIL; // alse
  if (c == 0x6e) return load<u32>(i) == 0x6c6c756e ? i + 4 : FAIL; // null
  return skipNumber(i);
}

/** With the frame at [0, len) and >= 16 zero bytes after it: the index past the value at `i`, or -1. */
export function skip(i: i32, len: i32): i32 {
  const j = value(i, 0);
  return j > len ? FAIL : j;
}
