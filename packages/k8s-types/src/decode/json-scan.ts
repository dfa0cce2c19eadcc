/**
 * A strict, allocation-free JSON scanner over a string: given the index of a value, the index just
 * past it, or `-1` when the text there is not a complete, valid JSON value. It exists so a frame
 * can have a subtree cut out before `JSON.parse` sees it (see `frame-cut.ts`), and its one
 * invariant is the one that cut relies on:
 *
 *   scanValue(text, i) === j (j ≥ 0)  ⇔  text.slice(i, j) is exactly one JSON value (RFC 8259),
 *                                          with no leading whitespace and no trailing character.
 *
 * It checks the grammar, not only the brackets: string escapes (`\uXXXX` with four hex digits),
 * no raw control character inside a string, the number grammar, the three literals, and `,` / `:`
 * placement. So a cut of a value the scanner accepted can neither make an invalid document valid
 * nor a valid one invalid. Whitespace between tokens is accepted as JSON allows.
 */

import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE } from './json-chars.js';

export { BACKSLASH, CLOSE_BRACE, COLON, COMMA, OPEN_BRACE, QUOTE };
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;

/** Index of the first non-whitespace character at or after `i` (JSON whitespace: space, tab, CR, LF). */
export function skipWhitespace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/**
 * `text[i]` is `"`: the index just past the closing quote, or `-1` for an unterminated string, a
 * bad escape or a raw control character (U+0000–U+001F), all of which `JSON.parse` rejects.
 */
export function scanString(text: string, i: number): number {
  // Fast path: the closing quote found natively, then one tight check that nothing before it is an
  // escape or a control character (the apiserver writes few escapes); otherwise the full walk.
  const close = text.indexOf('"', i + 1);
  if (close === -1) return -1;
  for (let j = i + 1; j < close; j++) {
    const c = text.charCodeAt(j);
    if (c < 0x20 || c === BACKSLASH) return scanEscapedString(text, i);
  }
  return close + 1;
}

/** {@link scanString} for a string holding an escape or a control character: every character checked. */
function scanEscapedString(text: string, i: number): number {
  const length = text.length;
  let j = i + 1;
  while (j < length) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) return j + 1;
    if (c === BACKSLASH) {
      const e = text.charCodeAt(j + 1);
      if (e === 0x75 /* u */) {
        if (
          !(
            isHex(text.charCodeAt(j + 2)) &&
            isHex(text.charCodeAt(j + 3)) &&
            isHex(text.charCodeAt(j + 4)) &&
            isHex(text.charCodeAt(j + 5))
          )
        )
          return -1;
        j += 6;
        continue;
      }
      // " \ / b f n r t
      if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        j += 2;
        continue;
      }
      return -1;
    }
    if (c < 0x20) return -1;
    j++;
  }
  return -1;
}

function scanDigits(text: string, i: number): number {
  let c = text.charCodeAt(i);
  while (c >= 0x30 && c <= 0x39) c = text.charCodeAt(++i);
  return i;
}

/** A JSON number at `i`: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; the index past it, or `-1`. */
export function scanNumber(text: string, i: number): number {
  if (text.charCodeAt(i) === MINUS) i++;
  const first = text.charCodeAt(i);
  if (first === 0x30) i++;
  else if (first >= 0x31 && first <= 0x39) i = scanDigits(text, i + 1);
  else return -1;
  if (text.charCodeAt(i) === DOT) {
    const end = scanDigits(text, i + 1);
    if (end === i + 1) return -1;
    i = end;
  }
  const e = text.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    i++;
    const sign = text.charCodeAt(i);
    if (sign === PLUS || sign === MINUS) i++;
    const end = scanDigits(text, i);
    if (end === i) return -1;
    i = end;
  }
  return i;
}

function scanLiteral(text: string, i: number, literal: string): number {
  return text.startsWith(literal, i) ? i + literal.length : -1;
}

/** One scalar (string, number, literal) at `i`, already past whitespace: the index past it, or `-1`. */
function scanScalar(text: string, i: number, c: number): number {
  if (c === QUOTE) return scanString(text, i);
  if (c === 0x74 /* t */) return scanLiteral(text, i, 'true');
  if (c === 0x66 /* f */) return scanLiteral(text, i, 'false');
  if (c === 0x6e /* n */) return scanLiteral(text, i, 'null');
  return scanNumber(text, i);
}

/**
 * The value starting exactly at `i` (no leading whitespace): the index just past it, or `-1` when
 * it is not one valid JSON value. Iterative, with the open containers on a small stack, so a deeply
 * nested hostile value cannot overflow the call stack.
 */
export function scanValue(text: string, i: number): number {
  const stack: number[] = []; // OPEN_BRACE or OPEN_BRACKET per open container
  for (;;) {
    // Expecting a value at i.
    let c = text.charCodeAt(i);
    if (c === OPEN_BRACE) {
      i = skipWhitespace(text, i + 1);
      if (text.charCodeAt(i) === CLOSE_BRACE) {
        i++;
      } else {
        // First member's key and colon.
        i = memberKey(text, i);
        if (i < 0) return -1;
        stack.push(OPEN_BRACE);
        continue;
      }
    } else if (c === OPEN_BRACKET) {
      i = skipWhitespace(text, i + 1);
      if (text.charCodeAt(i) === CLOSE_BRACKET) {
        i++;
      } else {
        stack.push(OPEN_BRACKET);
        continue;
      }
    } else {
      i = scanScalar(text, i, c);
      if (i < 0) return -1;
    }
    // After a complete value: close containers, or move to the next member / element.
    for (;;) {
      if (stack.length === 0) return i;
      i = skipWhitespace(text, i);
      c = text.charCodeAt(i);
      const open = stack[stack.length - 1];
      if (c === COMMA) {
        i = skipWhitespace(text, i + 1);
        if (open === OPEN_BRACE) {
          i = memberKey(text, i);
          if (i < 0) return -1;
        }
        break; // a value follows
      }
      if ((open === OPEN_BRACE && c === CLOSE_BRACE) || (open === OPEN_BRACKET && c === CLOSE_BRACKET)) {
        stack.pop();
        i++;
        continue;
      }
      return -1;
    }
  }
}

/** A member's key at `i`, its colon and the whitespace around them: the index of the value, or -1. */
function memberKey(text: string, i: number): number {
  if (text.charCodeAt(i) !== QUOTE) return -1;
  i = scanString(text, i);
  if (i < 0) return -1;
  i = skipWhitespace(text, i);
  if (text.charCodeAt(i) !== COLON) return -1;
  return skipWhitespace(text, i + 1);
}
