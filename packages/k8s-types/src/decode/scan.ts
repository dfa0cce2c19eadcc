/**
 * A strict JSON scanner over UTF-8 bytes, for readers that build a view straight from a frame's
 * bytes: it steps over whatever the view does not read without building it, and reads the few
 * tokens the view keeps. Its invariant, which lets a reader stand in for `JSON.parse`:
 *
 *   skipValue(b, i) === j (j ≥ 0)  ⇒  b[i, j) is exactly one JSON value (RFC 8259), with no
 *                                       leading whitespace and nothing after it.
 *
 * So a frame a reader walked to its end with these functions is one `JSON.parse` accepts. The
 * converse need not hold: `FAIL` means "not proven" (also for nesting deeper than {@link MAX_DEPTH}),
 * and the caller then reads the frame the exact way. Every check is on the bytes: string escapes
 * (`\uXXXX` with four hex digits), no raw control character in a string, the number grammar, the
 * three literals, `,` and `:` placement. Bytes of 0x80 and above are taken as they come, as the
 * exact path's UTF-8 decoder does (it reads a malformed sequence as U+FFFD, which JSON accepts).
 */

import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE } from './json-chars.js';

/** What a scan step returns when the bytes there are not (provably) valid JSON. */
export const FAIL = -1;

/** Nesting past which a skip gives up (the exact path then decides). */
export const MAX_DEPTH = 256;

export { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE };

/**
 * 1 for a byte that continues a string with nothing to check (anything but `"`, `\` and the
 * control characters below 0x20); a table lookup per byte is the cheapest test V8 compiles.
 */
const PLAIN = new Uint8Array(256);
for (let c = 0x20; c < 256; c++) PLAIN[c] = 1;
PLAIN[QUOTE] = 0;
PLAIN[BACKSLASH] = 0;

/** 1 for an ASCII hex digit. */
const HEX = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;

/** Index of the first byte at or after `i` that is not JSON whitespace (space, tab, CR, LF). */
export function skipWs(b: Uint8Array, i: number): number {
  let c = b[i]!;
  if (c > 0x20) return i; // the apiserver writes no whitespace: one test in the common case
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++i]!;
  return i;
}

/**
 * {@link skipWs} that never reads past the end of `b`, for where a frame may end. Elsewhere a valid
 * frame always has a byte to read; a read past the end would return `undefined`, and once V8 has
 * seen that, every byte read in the scanner compiles to a slower, untyped path.
 */
export function skipWsTo(b: Uint8Array, i: number): number {
  while (i < b.length) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

/** With `b[i]` a `"`: the index past the closing quote, or {@link FAIL}. */
export function skipString(b: Uint8Array, i: number): number {
  let k = i + 1;
  for (;;) {
    let c = b[k];
    while (PLAIN[c!] === 1) c = b[++k];
    if (c === QUOTE) return k + 1;
    k = skipEscape(b, k);
    if (k === FAIL) return FAIL;
  }
}

/** {@link skipString} for a string a reader keeps: also sets {@link scanned}, so the reader knows how to decode it. */
export function scanString(b: Uint8Array, i: number): number {
  let k = i + 1;
  let high = 0;
  let found = 0;
  let hash = 0;
  for (;;) {
    let c = b[k]!;
    while (PLAIN[c] === 1) {
      high |= c;
      hash = (Math.imul(hash, 31) + c) | 0;
      c = b[++k]!;
    }
    if (c === QUOTE) {
      scanned = found | (high >= 0x80 ? SCANNED_NON_ASCII : 0);
      scannedHash = hash;
      return k + 1;
    }
    found = SCANNED_ESCAPE;
    k = skipEscape(b, k);
    if (k === FAIL) return FAIL;
  }
}

/** With `b[k]` a byte a string cannot continue with unchecked: past the escape it starts, or {@link FAIL}. */
function skipEscape(b: Uint8Array, k: number): number {
  if (b[k] !== BACKSLASH) return FAIL; // a control character, or the end of the bytes
  const e = b[k + 1];
  if (e === 0x75)
    return HEX[b[k + 2]!] === 1 && HEX[b[k + 3]!] === 1 && HEX[b[k + 4]!] === 1 && HEX[b[k + 5]!] === 1 ? k + 6 : FAIL; // \uXXXX
  return e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74
    ? k + 2
    : FAIL;
}

/** The string {@link scanString} last accepted held an escape. */
export const SCANNED_ESCAPE = 1;
/** The string {@link scanString} last accepted held a byte of 0x80 or above. */
export const SCANNED_NON_ASCII = 2;
/** What {@link scanString} found in the string it last accepted: a mask of the `SCANNED_` bits. */
export let scanned = 0;
/** A hash of the bytes of the string {@link scanString} last accepted (meaningful when it held no escape). */
export let scannedHash = 0;

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

/** With `b[i]` starting a number: the index past it, or {@link FAIL} (RFC 8259's grammar). */
export function skipNumber(b: Uint8Array, i: number): number {
  let c = b[i];
  if (c === 0x2d) c = b[++i];
  if (c === 0x30) c = b[++i];
  else if (isDigit(c)) {
    do c = b[++i];
    while (isDigit(c));
  } else return FAIL;
  if (c === 0x2e) {
    c = b[++i];
    if (!isDigit(c)) return FAIL;
    do c = b[++i];
    while (isDigit(c));
  }
  if (c === 0x65 || c === 0x45) {
    c = b[++i];
    if (c === 0x2b || c === 0x2d) c = b[++i];
    if (!isDigit(c)) return FAIL;
    do c = b[++i];
    while (isDigit(c));
  }
  return i;
}

/** With `b[i]` the first byte of a value: the index past the value, or {@link FAIL}. */
export function skipValue(b: Uint8Array, i: number, depth = 0): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === OPEN_BRACE) {
    if (depth >= MAX_DEPTH) return FAIL;
    i = skipWs(b, i + 1);
    if (b[i] === CLOSE_BRACE) return i + 1;
    for (;;) {
      if (b[i] !== QUOTE) return FAIL;
      i = skipString(b, i);
      if (i === FAIL) return FAIL;
      i = skipWs(b, i);
      if (b[i] !== COLON) return FAIL;
      i = skipWs(b, i + 1);
      // `{}` is most of what a skip steps over (every leaf of managedFields' fieldsV1): no call for it.
      if (b[i] === OPEN_BRACE && b[i + 1] === CLOSE_BRACE) i += 2;
      else {
        i = skipValue(b, i, depth + 1);
        if (i === FAIL) return FAIL;
      }
      i = skipWs(b, i);
      const d = b[i];
      if (d === CLOSE_BRACE) return i + 1;
      if (d !== COMMA) return FAIL;
      i = skipWs(b, i + 1);
    }
  }
  if (c === OPEN_BRACKET) {
    if (depth >= MAX_DEPTH) return FAIL;
    i = skipWs(b, i + 1);
    if (b[i] === CLOSE_BRACKET) return i + 1;
    for (;;) {
      i = skipValue(b, i, depth + 1);
      if (i === FAIL) return FAIL;
      i = skipWs(b, i);
      const d = b[i];
      if (d === CLOSE_BRACKET) return i + 1;
      if (d !== COMMA) return FAIL;
      i = skipWs(b, i + 1);
    }
  }
  if (c === 0x74) return b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65 ? i + 4 : FAIL; // true
  if (c === 0x66) return b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x73 && b[i + 4] === 0x65 ? i + 5 : FAIL; // false
  if (c === 0x6e) return b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c ? i + 4 : FAIL; // null
  return skipNumber(b, i);
}
