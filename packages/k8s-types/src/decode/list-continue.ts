import {
  CLOSE_BRACE,
  COLON,
  COMMA,
  FAIL,
  OPEN_BRACE,
  QUOTE,
  SCANNED_ESCAPE,
  scanned,
  scanString,
  skipValue,
  skipWsTo,
} from './scan.js';

/**
 * Reads a LIST page's `metadata.continue` from the first bytes of its body, without reading the
 * page: so the next page can be requested while this one is read (the reflector's paged LIST).
 * A standalone scan over `scan.ts`'s functions; it never touches the byte reader's cursor, so it
 * may run just before `parseListPage` reads the same bytes.
 */

const METADATA = asciiBytes('metadata');
const ITEMS = asciiBytes('items');
const CONTINUE = asciiBytes('continue');

/** Decodes a token known to be plain ASCII (nothing to unescape, nothing to repair). */
const ascii = new TextDecoder();

function asciiBytes(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

/** Whether the string `b[start, end)` (quotes included, no escape) spells `word`. */
function spells(b: Uint8Array, start: number, end: number, word: Uint8Array): boolean {
  if (end - start - 2 !== word.length) return false;
  for (let i = 0; i < word.length; i++) if (b[start + 1 + i] !== word[i]) return false;
  return true;
}

/**
 * With `b[i]` the first byte of a member's name: the index past the name, checked to be a string
 * with no escape (an escaped name may spell any name once decoded, so nothing read after it can be
 * trusted), or {@link FAIL}.
 */
function memberName(b: Uint8Array, i: number): number {
  if (b[i] !== QUOTE) return FAIL;
  const end = scanString(b, i);
  return end === FAIL || (scanned & SCANNED_ESCAPE) !== 0 ? FAIL : end;
}

/** With `b[i]` past a member's name: the index of its value (past the `:`), or {@link FAIL}. */
function memberValue(b: Uint8Array, i: number): number {
  i = skipWsTo(b, i);
  return b[i] === COLON ? skipWsTo(b, i + 1) : FAIL;
}

/**
 * The `continue` token of the LIST page whose body (UTF-8 JSON) `bytes` holds, read from the body's
 * first bytes: the top-level members up to `metadata`, and in `metadata` only `continue`. The scan
 * stops at the end of `metadata`; the items after it (a page is 1–25 MB) are never looked at, so
 * the bytes after `metadata` need not even be valid JSON.
 *
 * Whenever it returns a string, `JSON.parse` of the same body (when it parses) has that string as
 * `metadata.continue`, with one exception it cannot see without reading the whole body: a second
 * top-level `metadata` member after the first (which `JSON.parse` would take instead, and which the
 * apiserver never writes). So a caller must take the page's token from the page as read and use
 * this one only as a guess to compare it with.
 *
 * Returns `undefined` whenever it cannot be sure: `items` before `metadata`, no `metadata` (or one
 * that is not an object), no `continue`, a `continue` that is not a string, a token or member name
 * with an escape, a token with a byte above 0x7F (the apiserver's tokens are base64), a duplicate
 * `continue`, bytes before the end of `metadata` that are not JSON (a byte-order mark included).
 * An empty token is returned as it is (`''`), which the apiserver means as "no more pages".
 */
export function listContinueToken(bytes: Uint8Array): string | undefined {
  const b = bytes;
  let i = skipWsTo(b, 0);
  if (b[i] !== OPEN_BRACE) return undefined;
  i = skipWsTo(b, i + 1);
  for (;;) {
    const name = i;
    i = memberName(b, i);
    if (i === FAIL) return undefined;
    const isMetadata = spells(b, name, i, METADATA);
    if (!isMetadata && spells(b, name, i, ITEMS)) return undefined;
    i = memberValue(b, i);
    if (i === FAIL) return undefined;
    if (isMetadata) return readContinue(b, i);
    i = skipValue(b, i);
    if (i === FAIL) return undefined;
    i = skipWsTo(b, i);
    // `}` here: a body without `metadata`.
    if (b[i] !== COMMA) return undefined;
    i = skipWsTo(b, i + 1);
  }
}

/** With `b[i]` the first byte of `metadata`'s value: its `continue` token, read as {@link listContinueToken} reads it. */
function readContinue(b: Uint8Array, i: number): string | undefined {
  if (b[i] !== OPEN_BRACE) return undefined;
  i = skipWsTo(b, i + 1);
  if (b[i] === CLOSE_BRACE) return undefined;
  let token: string | undefined;
  for (;;) {
    const name = i;
    i = memberName(b, i);
    if (i === FAIL) return undefined;
    const isContinue = spells(b, name, i, CONTINUE);
    i = memberValue(b, i);
    if (i === FAIL) return undefined;
    if (isContinue) {
      // A second `continue` (JSON.parse keeps the last), or one that is not a string.
      if (token !== undefined || b[i] !== QUOTE) return undefined;
      const start = i;
      i = scanString(b, i);
      // Any escape or non-ASCII byte: not a token the apiserver writes, and not one to decode here.
      if (i === FAIL || scanned !== 0) return undefined;
      token = ascii.decode(b.subarray(start + 1, i - 1));
    } else {
      i = skipValue(b, i);
      if (i === FAIL) return undefined;
    }
    i = skipWsTo(b, i);
    if (b[i] === CLOSE_BRACE) return token;
    if (b[i] !== COMMA) return undefined;
    i = skipWsTo(b, i + 1);
  }
}
