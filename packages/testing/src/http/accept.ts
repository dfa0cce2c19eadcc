/**
 * The server-side conversions a client asks for in its Accept header (`as=Table`,
 * `as=PartialObjectMetadata`, … with `g` and `v`), read the way kube-apiserver negotiates: media
 * types in the order given, JSON ones only (`application/json` or `*\/*`).
 */

/** The `as`, `g` and `v` parameters of one JSON media type of an Accept header. */
export interface Conversion {
  readonly as: string;
  readonly g: string | undefined;
  readonly v: string | undefined;
}

/**
 * The first answer `pick` gives for a JSON media type of `accept` that names a conversion; undefined
 * when a plain JSON media type (no `as`) comes first, or none matches: the client takes plain objects.
 */
export function negotiateConversion<R>(accept: string | undefined, pick: (c: Conversion) => R | undefined): R | undefined {
  if (accept === undefined) return undefined;
  for (const part of accept.split(',')) {
    const [type, ...params] = part.split(';').map((s) => s.trim());
    if (type !== 'application/json' && type !== '*/*') continue;
    const p: Record<string, string> = {};
    for (const kv of params) {
      const i = kv.indexOf('=');
      if (i > 0) p[kv.slice(0, i).trim()] = kv.slice(i + 1).trim();
    }
    if (p['as'] === undefined) return undefined;
    const picked = pick({ as: p['as'], g: p['g'], v: p['v'] });
    if (picked !== undefined) return picked;
  }
  return undefined;
}
