import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { readFrame } from '../src/decode/frames.js';
import { readPodObject } from '../src/decode/pod-reader.js';
import type { ObjectReader } from '../src/decode/readers.js';
import { skipValue } from '../src/decode/scan.js';
import { useWasmScan, WASM_FRAME_LIMIT, wasmWindow } from '../src/decode/wasm-scan.js';

// The reader builds podSchema's view (what these tests hold it to); it is typed as the least view.
const readPodFrame = (bytes: Uint8Array) => readFrame(bytes, readPodObject as ObjectReader<Pod>);
import {
  compileSchema,
  objectMetaSchema,
  objectSchema,
  parseListPage,
  parseObject,
  parseWatchFrame,
  parseWatchLine,
  podSchema,
  readWatchFrame,
  type Pod,
} from './all.js';
import { rawPod } from './fixtures.js';
import { difference, settle } from './view-equality.js';

const encode = (text: string): Buffer => Buffer.from(text, 'utf8');

/** What the exact path makes of a frame's text: the frame, or the error it throws. */
function exact(text: string): unknown {
  return settle(() => parseWatchLine(text, podSchema));
}

function viaBytes(bytes: Uint8Array): unknown {
  return settle(() => parseWatchFrame(bytes, podSchema));
}

/** Checks the reader's invariant on one frame; returns whether the reader (not the exact path) read it. */
function holds(text: string): boolean {
  const bytes = encode(text);
  const fast = readPodFrame(bytes);
  const expected = exact(text);
  if (fast !== undefined) {
    expect(difference(fast, expected)).toBeUndefined();
  }
  expect(difference(viaBytes(bytes), expected)).toBeUndefined();
  return fast !== undefined;
}

const frame = (object: unknown, type = 'MODIFIED'): string => JSON.stringify({ type, object });

/** Strings that exercise decoding: escapes, quotes, backslashes, non-ASCII, controls (escaped by JSON.stringify). */
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: fc.constantFrom('a', '"', '\\', '/', 'é', '😀', '\u2028', '\u0000', '\n', '{', '}'), maxLength: 8 }),
  fc.constantFrom('Running', 'True', 'Ready', 'pool-a', 'engine', '10.0.0.7', '__proto__', 'constructor', '1', '01'),
);

/** A value for a view field: usually the right type, sometimes `null`, absent or wrong. */
function variant<T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 6, arbitrary: good },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constant(undefined) }, // JSON.stringify drops the member
    { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.boolean(), text, fc.constant({}), fc.constant([])) },
  );
}

const timestamp = fc.oneof(
  fc
    .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true })
    .map((d) => d.toISOString().replace(/\.\d{3}Z$/, 'Z')),
  fc.constantFrom(
    '2024-05-01T10:11:12.5Z',
    '2024-05-01T10:11:12+02:00',
    '2024-13-01T10:11:12Z',
    '2024-02-30T10:11:12Z',
    'yesterday',
    '2024-05-01T24:00:00Z',
  ),
);
const integer = fc.oneof(
  fc.integer(),
  fc.constantFrom(0, -0, 2 ** 53 - 1, 2 ** 53, 1e21, 1.5, 123456789012345, 1234567890123456),
);
const map = fc.dictionary(text, variant(text), { maxKeys: 4 });
const ownerRef = fc.record(
  {
    apiVersion: variant(text),
    kind: variant(text),
    name: variant(text),
    uid: variant(text),
    controller: variant(fc.boolean()),
    blockOwnerDeletion: fc.boolean(),
  },
  { requiredKeys: [] },
);
const containerStatus = fc.record(
  {
    name: variant(text),
    ready: variant(fc.boolean()),
    started: variant(fc.boolean()),
    restartCount: variant(integer),
    image: text,
    state: variant(
      fc.record(
        {
          waiting: variant(fc.record({ reason: variant(text), message: text }, { requiredKeys: [] })),
          running: variant(fc.record({ startedAt: variant(timestamp) }, { requiredKeys: [] })),
          terminated: variant(
            fc.record(
              {
                exitCode: variant(integer),
                reason: variant(text),
                startedAt: variant(timestamp),
                finishedAt: variant(timestamp),
                signal: fc.integer(),
              },
              { requiredKeys: [] },
            ),
          ),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);

/** A pod with every view field varied (present, absent, null, wrong type) and members the view drops. */
const variedPod = fc.record(
  {
    metadata: variant(
      fc.record(
        {
          name: variant(text),
          namespace: variant(text),
          uid: variant(text),
          resourceVersion: variant(fc.oneof(text, fc.constantFrom('100', '42'))),
          generation: variant(integer),
          labels: variant(map),
          annotations: variant(map),
          ownerReferences: variant(fc.array(variant(ownerRef), { maxLength: 3 })),
          finalizers: variant(fc.array(variant(text), { maxLength: 3 })),
          creationTimestamp: variant(timestamp),
          deletionTimestamp: variant(timestamp),
          deletionGracePeriodSeconds: variant(integer),
          managedFields: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 2 }),
          generateName: text,
        },
        { requiredKeys: [] },
      ),
    ),
    spec: variant(
      fc.record(
        {
          nodeName: variant(text),
          containers: variant(
            fc.array(variant(fc.record({ name: variant(text), image: text, args: fc.array(text) }, { requiredKeys: [] })), {
              maxLength: 3,
            }),
          ),
          volumes: fc.jsonValue({ maxDepth: 3 }),
        },
        { requiredKeys: [] },
      ),
    ),
    status: variant(
      fc.record(
        {
          phase: variant(text),
          podIP: variant(text),
          podIPs: variant(fc.array(variant(fc.record({ ip: variant(text) }, { requiredKeys: [] })), { maxLength: 2 })),
          hostIP: variant(text),
          startTime: variant(timestamp),
          conditions: variant(
            fc.array(
              variant(
                fc.record({ type: variant(text), status: variant(text), lastTransitionTime: timestamp }, { requiredKeys: [] }),
              ),
              { maxLength: 4 },
            ),
          ),
          containerStatuses: variant(fc.array(variant(containerStatus), { maxLength: 2 })),
          qosClass: text,
        },
        { requiredKeys: [] },
      ),
    ),
    kind: fc.constant('Pod'),
  },
  { requiredKeys: [] },
);

/** Pods that validate: the varied pod with the fields the view requires set right. */
const validPod = fc
  .record({ name: text, resourceVersion: fc.constantFrom('1', '100', '987654321'), pod: variedPod })
  .map(({ name, resourceVersion, pod }) => {
    const metadata =
      typeof pod.metadata === 'object' && pod.metadata !== null && !Array.isArray(pod.metadata) ? pod.metadata : {};
    return { ...pod, metadata: { ...metadata, name, resourceVersion } };
  });

/** A field the view reads, right or absent (and `null` where the view reads `null`). */
const fit = <T>(good: fc.Arbitrary<T>, nullable = false): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 5, arbitrary: good },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: nullable ? 1 : 0, arbitrary: fc.constant(null) },
  );
const canonicalTime = fc
  .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString().replace(/\.\d{3}Z$/, 'Z'));
const smallInt = fc.integer({ min: -1000, max: 1_000_000 });
const labelMap = fc.dictionary(text, text, { maxKeys: 5 });

/** Pods the view accepts, with every optional member varied: the reader's own path, where equality matters most. */
const wellFormedPod = fc.record({
  metadata: fc.record({
    name: text,
    namespace: fit(text),
    uid: fit(text),
    resourceVersion: fc.constantFrom('1', '100', '987654321'),
    generation: fit(smallInt),
    labels: fit(labelMap, true),
    annotations: fit(labelMap, true),
    ownerReferences: fit(
      fc.array(fc.record({ apiVersion: text, kind: text, name: text, uid: text, controller: fit(fc.boolean()) }), {
        maxLength: 2,
      }),
      true,
    ),
    finalizers: fit(fc.array(text, { maxLength: 2 })),
    creationTimestamp: fit(canonicalTime, true),
    deletionTimestamp: fit(timestamp, true),
    managedFields: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 2 }),
  }),
  spec: fit(
    fc.record({ nodeName: fit(text), containers: fit(fc.array(fc.record({ name: text, image: text }), { maxLength: 3 }), true) }),
  ),
  status: fit(
    fc.record({
      phase: fit(text),
      podIP: fit(text),
      podIPs: fit(fc.array(fc.record({ ip: text }), { maxLength: 2 }), true),
      startTime: fit(canonicalTime, true),
      conditions: fit(
        fc.array(
          fc.record({ type: fc.constantFrom('Ready', 'PodScheduled', 'x\u0001y'), status: fc.constantFrom('True', 'False') }),
          { maxLength: 4 },
        ),
        true,
      ),
      containerStatuses: fit(
        fc.array(
          fc.record({
            name: text,
            ready: fc.boolean(),
            started: fit(fc.boolean()),
            restartCount: smallInt,
            state: fit(
              fc.record({
                waiting: fit(fc.record({ reason: fit(text) })),
                running: fit(fc.record({ startedAt: fit(canonicalTime, true) })),
                terminated: fit(fc.record({ exitCode: smallInt, reason: fit(text), finishedAt: fit(canonicalTime, true) })),
              }),
            ),
          }),
          { maxLength: 2 },
        ),
        true,
      ),
    }),
  ),
});

/**
 * How the reader steps over dropped members: in WebAssembly with each frame loaded whole; in
 * WebAssembly through windows of 61 bytes (as a LIST over its limit is, with windows that turn
 * inside every value); in JavaScript.
 */
const scanners = [
  ['WebAssembly', true, WASM_FRAME_LIMIT],
  ['WebAssembly through small windows', true, 61],
  ['JavaScript', false, WASM_FRAME_LIMIT],
] as const;

/** Reads the frames of a describe block the way `scanner` says. */
function scanWith(wasm: boolean, window: number): void {
  beforeAll(() => {
    useWasmScan(wasm);
    wasmWindow(window);
  });
  afterAll(() => {
    useWasmScan(true);
    wasmWindow(WASM_FRAME_LIMIT);
  });
}

// Every property below holds with the dropped members stepped over in WebAssembly (frames whole
// or through windows) and in JavaScript.
describe.each(scanners)('the byte reader for the bundled Pod view, stepping over dropped members in %s', (_, wasm, window) => {
  scanWith(wasm, window);

  it('[k8s_types: byte reader] reads every pod the view accepts itself, equal to the exact path in keys, order, values, sharing and frozenness', () => {
    const declined: string[] = [];
    fc.assert(
      fc.property(wellFormedPod, (pod) => {
        const text = frame(pod);
        // Escaped or non-ASCII strings and non-canonical times are read too: of what the exact path
        // accepts, the reader leaves alone only a `__proto__` map key.
        if (!holds(text) && !('threw' in (exact(text) as object)) && !text.includes('"__proto__"')) declined.push(text);
      }),
      { numRuns: 500 },
    );
    expect(declined).toEqual([]);
  });

  it('[k8s_types: byte reader] reads a frame exactly as JSON.parse and the zod view do, for every variation of every view field', () => {
    const types = fc.constantFrom('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR', 'SYNC');
    fc.assert(
      fc.property(fc.oneof(variedPod, validPod), types, (pod, type) => {
        holds(frame(pod, type));
      }),
      { numRuns: 600 },
    );
    // Not vacuous: some of these frames (those whose every field is right) are read by the reader
    // itself. Counted on a fixed sample so the count is a fact about the reader, not about this run's
    // draw (a random draw of 600 reads 3 to 20 of them).
    const sample = fc.sample(fc.tuple(fc.oneof(variedPod, validPod), types), { seed: 29, numRuns: 600 });
    expect(sample.filter(([pod, type]) => holds(frame(pod, type))).length).toBeGreaterThan(3);
  });

  it('[k8s_types: byte reader] reads valid pods itself (the fast path is taken), and equal to the exact path', () => {
    fc.assert(
      fc.property(validPod, (pod) => {
        holds(frame(pod));
      }),
      { numRuns: 400 },
    );
    // The fast path's share, on a fixed sample (a random draw of 400 reads 25 to 45).
    const sample = fc.sample(validPod, { seed: 29, numRuns: 400 });
    expect(sample.filter((pod) => holds(frame(pod))).length).toBeGreaterThan(400 * 0.02);
    // The fixture pod, as the apiserver writes it, is always read by the reader.
    expect(readPodFrame(encode(frame(rawPod())))).toBeDefined();
  });

  it('[k8s_types: byte reader] a corrupted frame reads as the exact path reads it: the same frame or the same error', () => {
    const base = frame(rawPod());
    fc.assert(
      fc.property(
        fc.nat({ max: base.length - 1 }),
        fc.constantFrom('', ' ', '"', '\\', '{', '}', ',', ':', '\u0001', '\t', 'x', '0', '-', 'é', 'null'),
        fc.nat({ max: 3 }),
        (at, insert, remove) => {
          holds(base.slice(0, at) + insert + base.slice(at + remove));
        },
      ),
      { numRuns: 1500 },
    );
    // Truncations: every prefix.
    for (let end = 0; end < base.length; end += 7) holds(base.slice(0, end));
  });

  it('[k8s_types: byte reader] spellings the apiserver never writes still read the same: whitespace, escapes, key order, duplicates', () => {
    const pod = rawPod();
    const meta = pod['metadata'] as Record<string, unknown>;
    const cases = [
      JSON.stringify({ type: 'MODIFIED', object: pod }, null, 2), // whitespace and newlines between tokens
      ` \t${frame(pod)}\r `,
      frame(pod).replace('"name":', '"n\\u0061me":'), // an escaped key that spells a view member
      frame(pod).replace('"phase":"Running"', '"phase":"Run\\u006eing"'),
      frame(pod).replace('"app":"sglang-engine"', '"app":"sglang\\/engine\\u00e9"'),
      JSON.stringify({ object: pod, type: 'ADDED' }), // type after object
      frame(pod).replace('"phase":"Running"', '"phase":"Running","phase":"Pending"'), // duplicate member
      frame(pod).replace('"app":"sglang-engine"', '"app":"a","app":"b"'), // duplicate label: first place, last value
      frame(pod).replace('"app":"sglang-engine"', '"__proto__":"x"'),
      frame(pod).replace('"app":"sglang-engine"', '"2":"two","1":"one"'), // integer-like keys reorder
      frame({
        ...pod,
        metadata: { ...meta, labels: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, `v${i}`])) },
      }), // too large to share
      frame({ ...pod, spec: null }),
      frame({ ...pod, status: undefined, spec: undefined }),
      frame({ ...pod, metadata: { ...meta, generation: 1.0 } }).replace('"generation":1', '"generation":1.0'),
      frame({ ...pod, metadata: { ...meta, generation: 1 } }).replace('"generation":1', '"generation":1e0'),
      frame({ ...pod, metadata: { ...meta, generation: 1 } }).replace('"generation":1', '"generation":-0'),
      frame({ ...pod, metadata: { ...meta, creationTimestamp: '2024-05-01T10:11:12.123456Z' } }),
      `\uFEFF${frame(pod)}`, // a byte-order mark
      `${frame(pod)}x`,
      `${frame(pod)}{}`,
      frame(pod).replace('"type":"MODIFIED"', '"type":"MODIFIED","type":"DELETED"'),
    ];
    for (const text of cases) holds(text);
  });

  it('[k8s_types: byte reader] shares repeating values as the exact path does: one frozen label map, condition list and owner list across pods', () => {
    const read = (name: string): Pod => readPodFrame(encode(frame(rawPod({ name }))))!.object;
    read('a');
    const b = read('b');
    const c = read('c');
    expect(b.metadata.labels).toBe(c.metadata.labels);
    expect(Object.isFrozen(b.metadata.labels)).toBe(true);
    expect(b.status.conditions).toBe(c.status.conditions);
    expect(b.metadata.ownerReferences).toBe(c.metadata.ownerReferences);
    expect(b.spec.containers).toBe(c.spec.containers);
    // Frozen where the exact path's are (shared there), equal in value.
    const viaExact = readWatchFrame(JSON.parse(frame(rawPod({ name: 'c' }))), podSchema);
    expect(difference(viaExact, readPodFrame(encode(frame(rawPod({ name: 'c' })))))).toBeUndefined();
  });

  it('[k8s_types: byte reader] a value is held for sharing from its second sight on: a map read once (a per-pod heartbeat) takes no slot', () => {
    const withBeat = (beat: string): Pod => {
      const pod = rawPod({ name: 'beating' });
      const meta = pod['metadata'] as Record<string, unknown>;
      return readPodFrame(encode(frame({ ...pod, metadata: { ...meta, annotations: { 'miles.io/heartbeat': beat } } })))!.object;
    };
    // A beat of its own per run of this suite: the caches outlive a run.
    const beat = `unique-${String(wasm)}-${window}`;
    const first = withBeat(beat);
    // Other maps read in between push the first sight out of what the cache remembers.
    for (let i = 0; i < 4; i++) withBeat(`${beat}-other-${i}`);
    const second = withBeat(beat);
    const third = withBeat(beat);
    expect(Object.isFrozen(first.metadata.annotations)).toBe(true);
    expect(second.metadata.annotations).not.toBe(first.metadata.annotations); // not held after one sight
    expect(third.metadata.annotations).toBe(second.metadata.annotations); // held after the second
  });

  it('[k8s_types: byte reader] a value seen again soon is shared from its first instance: the first pod of an owner in a LIST shares its label map and owner list', () => {
    const sibling = (name: string, cell: string): Pod => {
      const pod = rawPod({ name });
      const meta = pod['metadata'] as Record<string, unknown>;
      const owner = {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        name: `rs-${cell}`,
        uid: `uid-${cell}-${String(wasm)}`,
        controller: true,
      };
      return readPodFrame(
        encode(
          frame({
            ...pod,
            metadata: {
              ...meta,
              labels: { cell: `${cell}-${String(wasm)}` },
              annotations: { beat: `${name}-${String(wasm)}` },
              ownerReferences: [owner],
            },
          }),
        ),
      )!.object;
    };
    const [a, b, c] = [sibling('a', 'x'), sibling('b', 'x'), sibling('c', 'x')];
    expect(b.metadata.labels).toBe(a.metadata.labels);
    expect(c.metadata.labels).toBe(a.metadata.labels);
    expect(b.metadata.ownerReferences).toBe(a.metadata.ownerReferences);
    expect(c.metadata.ownerReferences).toBe(a.metadata.ownerReferences);
    expect(b.metadata.annotations).not.toBe(a.metadata.annotations); // different values: never one instance
  });

  it("[k8s_types: byte reader] a view of your own is read the exact way (the reader is the bundled view's alone)", () => {
    const mine = compileSchema(objectSchema({ metadata: objectMetaSchema.extend({ generateName: z.string().optional() }) }));
    const bytes = encode(frame({ ...rawPod(), metadata: { ...(rawPod()['metadata'] as object), generateName: 'engine-' } }));
    const read = parseWatchFrame(bytes, mine);
    expect(read.type === 'MODIFIED' && read.object.metadata.generateName).toBe('engine-');
    // compileSchema keeps the bundled view's reader.
    const recompiled = compileSchema(podSchema);
    const viaRecompiled = parseWatchFrame(encode(frame(rawPod())), recompiled) as { object: Pod };
    expect(difference(viaRecompiled, readPodFrame(encode(frame(rawPod()))))).toBeUndefined();
  });
});

/** Checks a LIST page read from bytes against `JSON.parse` and `parseObject` item by item; returns how many items the reader read. */
function pageHolds(text: string): number {
  const page = parseListPage(encode(text), podSchema);
  if (page === undefined) return 0;
  const body = JSON.parse(text) as { metadata: { resourceVersion: string; continue?: string }; items: unknown[] };
  expect(page.resourceVersion).toBe(body.metadata.resourceVersion);
  expect(page.continue).toBe(body.metadata.continue === '' ? undefined : body.metadata.continue);
  expect(page.items.length).toBe(body.items.length);
  let read = 0;
  page.items.forEach((item, i) => {
    let expected: unknown;
    try {
      expected = parseObject(podSchema, body.items[i], 'LIST');
    } catch {
      expected = undefined;
    }
    if (item.view !== undefined) {
      read++;
      expect(difference(item.view, expected)).toBeUndefined();
    } else expect(item.raw).toEqual(body.items[i]);
  });
  return read;
}

const listBody = (items: unknown[], meta: Record<string, unknown> = { resourceVersion: '500', continue: 'c2' }): string =>
  JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: meta, items });

describe.each(scanners)('LIST pages read from their bytes, stepping over dropped members in %s', (_, wasm, window) => {
  scanWith(wasm, window);

  it('[k8s_types: byte reader] a LIST page reads as JSON.parse and parseObject read it, item by item; an item the reader cannot prove is handed over parsed', () => {
    let read = 0;
    fc.assert(
      fc.property(fc.array(fc.oneof(wellFormedPod, variedPod), { maxLength: 6 }), fc.constantFrom('', 'token'), (pods, cont) => {
        read += pageHolds(listBody(pods, { resourceVersion: '77', continue: cont, remainingItemCount: 3 }));
      }),
      { numRuns: 200 },
    );
    expect(read).toBeGreaterThan(50);
    const base = listBody([rawPod({ name: 'a' }), rawPod({ name: 'b' })]);
    expect(pageHolds(base)).toBe(2);
  });

  it('[k8s_types: byte reader] a LIST page the reader cannot prove is left to the exact path whole', () => {
    const base = listBody([rawPod({ name: 'a' }), rawPod({ name: 'b' })]);
    for (const text of [
      base.replace('"items":[', '"items":null,"x":['),
      base.replace('"resourceVersion":"500"', '"resourceVersion":500'),
      `${base}x`,
      base.slice(0, -3),
      base.replace('"metadata":', '"metadata":{},"metadata":'),
    ]) {
      expect(parseListPage(encode(text), podSchema)).toBeUndefined();
    }
    fc.assert(
      fc.property(
        fc.nat({ max: base.length - 1 }),
        fc.constantFrom('', '"', '\\', '{', '}', ',', '\u0001', 'x'),
        (at, insert) => {
          const text = base.slice(0, at) + insert + base.slice(at + 1);
          if (parseListPage(encode(text), podSchema) !== undefined) pageHolds(text);
        },
      ),
      { numRuns: 800 },
    );
    // A view of your own has no byte reader: always the exact path.
    expect(parseListPage(encode(base), compileSchema(objectSchema({})))).toBeUndefined();
  });
});

describe('the byte scanner', () => {
  it('[k8s_types: byte reader] accepts exactly one JSON value: whatever it accepts, JSON.parse accepts', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.json(),
          fc.string({
            unit: fc.constantFrom(
              '{',
              '}',
              '[',
              ']',
              '"',
              '\\',
              ',',
              ':',
              ' ',
              'a',
              '1',
              '-',
              '.',
              'e',
              'u',
              'n',
              't',
              'r',
              'f',
              'l',
              's',
              '\u0001',
            ),
          }),
        ),
        (value) => {
          const bytes = encode(value);
          const end = skipValue(bytes, 0);
          if (end >= 0) expect(() => JSON.parse(bytes.subarray(0, end).toString('utf8'))).not.toThrow();
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe.each(scanners)('what the byte reader holds, stepping over dropped members in %s', (_, wasm, window) => {
  scanWith(wasm, window);

  it('[k8s_types: byte reader] lets go of a frame once read: a page body is unreachable after parseListPage returns', async () => {
    let body: Uint8Array | undefined = encode(listBody([rawPod({ name: 'held-a' }), rawPod({ name: 'held-b' })]));
    const gone = new WeakRef(body);
    const page = parseListPage(body, podSchema);
    expect(page?.items.length).toBe(2);
    body = undefined;
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    for (let i = 0; i < 3 && gone.deref() !== undefined; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    expect(gone.deref()).toBeUndefined();
  });
});
