import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listContinueToken, parseListPage, podSchema } from './all.js';
import { rawPod } from './fixtures.js';

const encode = (text: string): Buffer => Buffer.from(text, 'utf8');
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** What the exact path reads as the page's `metadata.continue` from the same bytes, or `'threw'`. */
function exactContinue(bytes: Uint8Array): unknown {
  try {
    const parsed = JSON.parse(decoder.decode(bytes)) as { metadata?: { continue?: unknown } } | null;
    return parsed?.metadata?.continue;
  } catch {
    return 'threw';
  }
}

/** Checks the function's promise on one body; returns whether it answered a string. */
function holds(text: string): boolean {
  const bytes = encode(text);
  const token = listContinueToken(bytes);
  if (token === undefined) return false;
  const exact = exactContinue(bytes);
  if (exact !== 'threw') expect(token).toBe(exact);
  return true;
}

/** A member name as JSON text: as JSON.stringify writes it, or every character as `\uXXXX` (the same name to JSON.parse). */
const name = (key: string): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 20, arbitrary: fc.constant(JSON.stringify(key)) },
    {
      weight: 1,
      arbitrary: fc.constant(`"${[...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`),
    },
  );

/** JSON whitespace, mostly none (the apiserver writes none). */
const ws = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constantFrom(' ', '\n', '\t', '\r\n  ') },
);

/** Members written `name: value` with whitespace around, joined into an object. */
function object(members: fc.Arbitrary<string[]>): fc.Arbitrary<string> {
  return fc.tuple(members, ws, ws).map(([list, before, after]) => `{${before}${list.join(`${after},${before}`)}${after}}`);
}
const member = (key: fc.Arbitrary<string>, value: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.tuple(key, ws, ws, value).map(([k, a, b, v]) => `${k}${a}:${b}${v}`);

/** Tokens: base64 as the apiserver writes them, and strings a token never is (escapes, non-ASCII, controls, empty). */
const token = fc.oneof(
  fc.base64String({ maxLength: 40 }),
  fc.string({ maxLength: 10 }),
  fc.string({ unit: fc.constantFrom('a', '"', '\\', '/', 'é', '😀', '\u2028', '\u0000', '\n', '{', '}'), maxLength: 8 }),
  fc.constant(''),
);
/** A `continue` value: mostly a string (as JSON.stringify writes it, or with every character escaped), sometimes not a string at all. */
const continueValue = fc.oneof(
  { weight: 6, arbitrary: token.chain((t) => name(t)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)) },
);
const otherKey = fc.string({ maxLength: 8 }).filter((k) => k !== 'metadata' && k !== 'items' && k !== 'continue');
const anyValue = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v));

/** `metadata`: resourceVersion, continue (sometimes twice, sometimes absent), remainingItemCount and members the page does not read, in any order. */
const metadata = fc.oneof(
  {
    weight: 8,
    arbitrary: object(
      fc
        .tuple(
          fc
            .oneof({ weight: 6, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constantFrom(0, 2) })
            .chain((n) => fc.array(member(name('continue'), continueValue), { minLength: n, maxLength: n })),
          member(
            name('resourceVersion'),
            fc.nat().map((n) => JSON.stringify(String(n))),
          ),
          member(name('remainingItemCount'), fc.nat().map(String)),
          fc.array(member(otherKey.chain(name), anyValue), { maxLength: 2 }),
        )
        .chain(([continues, rv, remaining, others]) =>
          fc.shuffledSubarray([...continues, rv, remaining, ...others], { minLength: continues.length }),
        ),
    ),
  },
  { weight: 1, arbitrary: anyValue },
);

/** A LIST body: kind, apiVersion, at most one `metadata`, items, and members nobody reads, in any order. */
const body = fc
  .tuple(
    member(name('kind'), fc.constant('"PodList"')),
    member(name('apiVersion'), fc.constant('"v1"')),
    fc.option(member(name('metadata'), metadata), { nil: undefined, freq: 8 }),
    fc.option(
      member(
        name('items'),
        fc
          .array(fc.oneof(anyValue, fc.constant(JSON.stringify(rawPod()))), { maxLength: 3 })
          .map((items) => `[${items.join(',')}]`),
      ),
      { nil: undefined, freq: 8 },
    ),
    fc.array(member(otherKey.chain(name), anyValue), { maxLength: 2 }),
    ws,
  )
  .chain(([kind, apiVersion, meta, items, others, outer]) => {
    // The apiserver's order (metadata before items) or any order.
    const all = [kind, apiVersion, ...others, ...(meta === undefined ? [] : [meta]), ...(items === undefined ? [] : [items])];
    const order = fc.oneof(fc.constant(all), fc.shuffledSubarray(all, { minLength: all.length }));
    return object(order).map((text) => `${outer}${text}${outer}`);
  });

/** A page as the apiserver writes it (metadata first, a base64 token). */
const served = (cont: string, items: unknown[] = [rawPod({ name: 'a' })]): string =>
  JSON.stringify({
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: { resourceVersion: '77', continue: cont, remainingItemCount: 3 },
    items,
  });

describe("[k8s_types: LIST continue token] listContinueToken reads a page's continue token from its first bytes", () => {
  it('[k8s_types: LIST continue token] whenever it answers a string, JSON.parse of the same bytes has that string as metadata.continue (any member order, whitespace, escapes, non-string tokens)', () => {
    let answered = 0;
    let runs = 0;
    fc.assert(
      fc.property(body, (text) => {
        runs++;
        if (holds(text)) answered++;
      }),
      { numRuns: 2_000 },
    );
    // The property is not vacuous: a fair share of the bodies have a token it can read (about one in seven).
    expect(answered).toBeGreaterThan(runs / 20);
  });

  it("[k8s_types: LIST continue token] a body the apiserver writes always gives its token, equal to parseListPage's", () => {
    fc.assert(
      fc.property(fc.base64String({ minLength: 1, maxLength: 200 }), (cont) => {
        const bytes = encode(served(cont));
        expect(listContinueToken(bytes)).toBe(cont);
        expect(parseListPage(bytes, podSchema)?.continue).toBe(cont);
      }),
      { numRuns: 300 },
    );
    const real = 'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDUsInN0YXJ0IjoicG9vbC1hL2VuZ2luZS0yNDlcdTAwMDAifQ';
    expect(listContinueToken(encode(served(real)))).toBe(real);
    expect(listContinueToken(encode(served('')))).toBe('');
  });

  it('[k8s_types: LIST continue token] a byte changed, inserted or removed anywhere never makes it answer a token JSON.parse would not', () => {
    const base = served('dG9rZW4tMQ', [rawPod({ name: 'a' }), rawPod({ name: 'b' })]);
    fc.assert(
      fc.property(
        fc.nat({ max: base.length - 1 }),
        fc.constantFrom('', ' ', '"', '\\', '{', '}', '[', ',', ':', '\u0001', 'x', 'é', '\\u0041'),
        fc.nat({ max: 2 }),
        (at, insert, remove) => {
          holds(base.slice(0, at) + insert + base.slice(at + remove));
        },
      ),
      { numRuns: 1_500 },
    );
  });

  it('[k8s_types: LIST continue token] undefined whenever it cannot be sure: items before metadata, an escaped or non-string token, malformed bytes, no metadata', () => {
    const cases: Record<string, string> = {
      'items before metadata': '{"items":[],"metadata":{"continue":"t"}}',
      'an escaped token': '{"metadata":{"continue":"t\\u0031"},"items":[]}',
      'an escaped slash in the token': '{"metadata":{"continue":"a\\/b"},"items":[]}',
      'a non-ASCII token': '{"metadata":{"continue":"é"},"items":[]}',
      'a number': '{"metadata":{"continue":7},"items":[]}',
      null: '{"metadata":{"continue":null},"items":[]}',
      'an object': '{"metadata":{"continue":{"t":1}},"items":[]}',
      'two continues': '{"metadata":{"continue":"a","continue":"b"},"items":[]}',
      'an escaped member name in metadata': '{"metadata":{"contin\\u0075e":"a"},"items":[]}',
      'an escaped member name before metadata': '{"meta\\u0064ata":{"continue":"a"},"items":[]}',
      'no metadata': '{"kind":"PodList","items":[]}',
      'metadata not an object': '{"metadata":"continue","items":[]}',
      'metadata null': '{"metadata":null,"items":[]}',
      'an empty metadata': '{"metadata":{},"items":[]}',
      'no continue': '{"metadata":{"resourceVersion":"5"},"items":[]}',
      'not an object': '["metadata",{"continue":"t"}]',
      'a byte-order mark': '\uFEFF{"metadata":{"continue":"t"},"items":[]}',
      'a raw control character in the token': '{"metadata":{"continue":"t\u0001"},"items":[]}',
      'a truncated metadata': '{"metadata":{"continue":"t"',
      'a malformed member before metadata': '{"kind":PodList,"metadata":{"continue":"t"}}',
      'a missing colon': '{"metadata"{"continue":"t"}}',
      'a malformed member in metadata': '{"metadata":{"resourceVersion":5x,"continue":"t"}}',
      'empty bytes': '',
    };
    for (const [what, text] of Object.entries(cases)) expect(listContinueToken(encode(text)), what).toBeUndefined();
  });

  it('[k8s_types: LIST continue token] stops at the end of metadata: the bytes after it (the items, 1–25 MB) are never read, valid or not', () => {
    expect(
      listContinueToken(encode('{"kind":"PodList","metadata":{"resourceVersion":"9","continue":"dG9r"},"items":[{"not json')),
    ).toBe('dG9r');
    // A second metadata (never written by the apiserver) is not looked for: JSON.parse takes the
    // last, so the caller compares this guess with the page as read (the reflector does).
    const twice = '{"metadata":{"continue":"first"},"metadata":{"continue":"last"},"items":[]}';
    expect(listContinueToken(encode(twice))).toBe('first');
    expect(exactContinue(encode(twice))).toBe('last');
    // On a page of 5,000 pods the answer is the same with its items cut off: nothing past metadata is scanned.
    const big = served(
      'dG9rZW4',
      Array.from({ length: 5_000 }, (_, i) => rawPod({ name: `engine-${i}` })),
    );
    expect(listContinueToken(encode(big))).toBe('dG9rZW4');
    expect(listContinueToken(encode(big.slice(0, big.indexOf('"items"') + 9)))).toBe('dG9rZW4');
  });
});
