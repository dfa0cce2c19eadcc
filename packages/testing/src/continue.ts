/**
 * Continue tokens shaped as the apiserver's: base64url (no padding) of
 * `{"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key after the last item>\u0000"}`.
 * `rv: -1` marks an inconsistent continuation that reads the newest state.
 */

/** A decoded continue token. */
export interface ContinueToken {
  rv: number;
  /** Storage key relative to the list's prefix, e.g. `name\u0000` or `ns/name\u0000`. */
  start: string;
}

/** Encodes a continue token. */
export function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start }), 'utf8').toString('base64url');
}

/** Decodes a continue token, or returns the reason it is not valid. */
export function decodeContinue(token: string): ContinueToken | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return 'continue key is not valid: illegal base64 data or JSON';
  }
  if (typeof parsed !== 'object' || parsed === null) return 'continue key is not valid: not an object';
  const p = parsed as Record<string, unknown>;
  if (p['v'] !== 'meta.k8s.io/v1')
    return 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)';
  if (typeof p['rv'] !== 'number' || !Number.isInteger(p['rv']) || p['rv'] === 0)
    return 'continue key is not valid: incorrect encoded start resourceVersion';
  if (typeof p['start'] !== 'string' || p['start'] === '') return 'continue key is not valid: encoded start key empty';
  if (p['start'].includes('..')) return 'continue key is not valid: path traversal attempt';
  return { rv: p['rv'], start: p['start'] };
}
