/**
 * The metadata-only view's byte reader (`decode/metadata-reader.ts`) against the exact path
 * (`JSON.parse` and `partialObjectMetadataSchema`): every frame and every LIST item it reads is the
 * value the exact path builds, down to key order, frozenness and shared instances, and whatever it
 * cannot prove is left to the exact path.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readFrame } from '../src/decode/frames.js';
import { readPartialObjectMetadata } from '../src/decode/metadata-reader.js';
import type { ObjectReader } from '../src/decode/readers.js';
import {
  parseListPage,
  parseObject,
  parseWatchFrame,
  parseWatchLine,
  partialObjectMetadataSchema,
  type PartialObjectMetadata,
} from './all.js';
import { rawPod } from './fixtures.js';
import { difference, settle } from './view-equality.js';

const readMetadataFrame = (bytes: Uint8Array) =>
  readFrame(bytes, readPartialObjectMetadata as ObjectReader<PartialObjectMetadata>);
const encode = (text: string): Buffer => Buffer.from(text, 'utf8');

/** Checks the reader's invariant on one frame; returns whether the reader (not the exact path) read it. */
function holds(text: string): boolean {
  const bytes = encode(text);
  const fast = readMetadataFrame(bytes);
  const expected = settle(() => parseWatchLine(text, partialObjectMetadataSchema));
  if (fast !== undefined) expect(difference(fast, expected)).toBeUndefined();
  expect(
    difference(
      settle(() => parseWatchFrame(bytes, partialObjectMetadataSchema)),
      expected,
    ),
  ).toBeUndefined();
  return fast !== undefined;
}

const frame = (object: unknown, type = 'MODIFIED'): string => JSON.stringify({ type, object });

const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: fc.constantFrom('a', '"', '\\', '/', 'é', '😀', '\u0000', '\n', '{'), maxLength: 8 }),
  fc.constantFrom('meta.k8s.io/v1', 'PartialObjectMetadata', 'pool-a', '__proto__', '1', 'trainer-cell-7-7d9f8b6c5-abcde'),
);
function variant<T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 6, arbitrary: good },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.boolean(), text, fc.constant({}), fc.constant([])) },
  );
}
const canonicalTime = fc
  .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString().replace(/\.\d{3}Z$/, 'Z'));
const labelMap = fc.dictionary(text, text, { maxKeys: 5 });
const ownerReferences = fc.array(
  fc.record(
    { apiVersion: text, kind: text, name: text, uid: text, controller: fc.boolean(), blockOwnerDeletion: fc.boolean() },
    {
      requiredKeys: ['apiVersion', 'kind', 'name', 'uid'],
    },
  ),
  { maxLength: 2 },
);

/** Metadata-only objects with every view field varied (present, absent, null or mistyped) and members the view drops. */
const variedObject = fc.record(
  {
    apiVersion: variant(fc.constant('meta.k8s.io/v1')),
    kind: variant(fc.constant('PartialObjectMetadata')),
    metadata: variant(
      fc.record(
        {
          name: variant(text),
          generateName: text,
          namespace: variant(text),
          uid: variant(text),
          resourceVersion: variant(fc.constantFrom('1', '100', '987654321')),
          generation: variant(fc.integer()),
          labels: variant(labelMap),
          annotations: variant(labelMap),
          ownerReferences: variant(ownerReferences),
          finalizers: variant(fc.array(variant(text), { maxLength: 2 })),
          creationTimestamp: variant(canonicalTime),
          deletionTimestamp: variant(canonicalTime),
          deletionGracePeriodSeconds: variant(fc.integer()),
          managedFields: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 2 }),
        },
        { requiredKeys: [] },
      ),
    ),
    spec: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: [] },
);

/** Objects the view accepts, every optional member varied: the reader's own path. */
const wellFormed = fc.record({
  apiVersion: fc.constantFrom('meta.k8s.io/v1', undefined),
  kind: fc.constantFrom('PartialObjectMetadata', undefined),
  metadata: fc.record(
    {
      name: text,
      generateName: text,
      namespace: text,
      uid: text,
      resourceVersion: fc.constantFrom('1', '100', '987654321'),
      generation: fc.integer({ min: 0, max: 1_000_000 }),
      labels: labelMap,
      annotations: labelMap,
      ownerReferences,
      finalizers: fc.array(text, { maxLength: 2 }),
      creationTimestamp: canonicalTime,
      deletionTimestamp: canonicalTime,
      managedFields: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 2 }),
    },
    { requiredKeys: ['name', 'resourceVersion'] },
  ),
});

/** A pod as the apiserver sends it for `as=PartialObjectMetadata`: the pod's metadata, no spec or status. */
function partial(overrides: { name?: string; resourceVersion?: string } = {}): Record<string, unknown> {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: rawPod(overrides)['metadata'] };
}

describe('the byte reader for the metadata-only view', () => {
  it('[k8s_types: metadata byte reader] reads every object the view accepts itself, equal to the exact path in keys, order, values, sharing and frozenness', () => {
    const declined: string[] = [];
    fc.assert(
      fc.property(wellFormed, (object) => {
        const text = frame(object);
        // Of what the exact path accepts, the reader leaves alone only a `__proto__` map key.
        const accepted = !('threw' in (settle(() => parseWatchLine(text, partialObjectMetadataSchema)) as object));
        if (!holds(text) && accepted && !text.includes('"__proto__"')) declined.push(text);
      }),
      { numRuns: 400 },
    );
    expect(declined).toEqual([]);
    expect(readMetadataFrame(encode(frame(partial())))).toBeDefined();
  });

  it('[k8s_types: metadata byte reader] reads a frame exactly as JSON.parse and the zod view do, for every variation of every view field', () => {
    const types = fc.constantFrom('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR');
    fc.assert(
      fc.property(fc.oneof(variedObject, wellFormed), types, (object, type) => {
        holds(frame(object, type));
      }),
      { numRuns: 600 },
    );
    // Not vacuous: on a fixed sample, some frames are read by the reader itself.
    const sample = fc.sample(fc.tuple(fc.oneof(variedObject, wellFormed), types), { seed: 28, numRuns: 300 });
    expect(sample.filter(([object, type]) => holds(frame(object, type))).length).toBeGreaterThan(10);
  });

  it('[k8s_types: metadata byte reader] a corrupted frame reads as the exact path reads it: the same frame or the same error', () => {
    const base = frame(partial());
    fc.assert(
      fc.property(
        fc.nat({ max: base.length - 1 }),
        fc.constantFrom('', ' ', '"', '\\', '{', '}', ',', ':', 'x', '0', 'null'),
        fc.nat({ max: 3 }),
        (at, insert, remove) => {
          holds(base.slice(0, at) + insert + base.slice(at + remove));
        },
      ),
      { numRuns: 800 },
    );
    for (let end = 0; end < base.length; end += 11) holds(base.slice(0, end));
  });

  it('[k8s_types: metadata byte reader] reads a PartialObjectMetadataList page item by item as parseObject does, sharing equal owner lists and label maps', () => {
    const items = Array.from({ length: 16 }, (_, i) => partial({ name: `engine-${i}`, resourceVersion: String(100 + i) }));
    const body = encode(
      JSON.stringify({
        kind: 'PartialObjectMetadataList',
        apiVersion: 'meta.k8s.io/v1',
        metadata: { resourceVersion: '200', continue: 'next' },
        items,
      }),
    );
    const page = parseListPage(body, partialObjectMetadataSchema);
    expect(page?.resourceVersion).toBe('200');
    expect(page?.continue).toBe('next');
    const views = page!.items.map((item) => item.view);
    views.forEach((view, i) => {
      expect(view).toBeDefined();
      expect(difference(view, parseObject(partialObjectMetadataSchema, items[i], 'LIST'))).toBeUndefined();
    });
    // Equal owner-reference lists and label maps across the page are one frozen instance each.
    const meta = (i: number) => views[i]!.metadata;
    expect(new Set(views.map((_, i) => meta(i).ownerReferences)).size).toBe(1);
    expect(new Set(views.map((_, i) => meta(i).labels)).size).toBe(1);
    expect(Object.isFrozen(meta(0).labels)).toBe(true);
  });
});
