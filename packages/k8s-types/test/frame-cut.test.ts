import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { cutWatchLine, metadataKeysRead } from '../src/decode/frame-cut.js';
import { scanValue } from '../src/decode/json-scan.js';
import {
  compileSchema,
  objectMetaSchema,
  objectSchema,
  parseWatchLine,
  podSchema,
  readWatchFrame,
  type ObjectSchema,
} from './all.js';
import { rawPod } from './fixtures.js';

/** What `parseWatchLine` returned before the cut: the whole line through `JSON.parse`, or the error it threw. */
function wholeLine<T>(line: string, schema: ObjectSchema<T>): unknown {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (error) {
    return { threw: 'MalformedWatchFrameError', message: `watch line is not JSON: ${(error as Error).message}`, issues: [] };
  }
  try {
    return readWatchFrame(raw, schema);
  } catch (error) {
    return { threw: (error as Error).name, message: (error as Error).message, issues: (error as { issues?: unknown }).issues };
  }
}

function viaCut<T>(line: string, schema: ObjectSchema<T>): unknown {
  try {
    return parseWatchLine(line, schema, { cutUnread: true });
  } catch (error) {
    return { threw: (error as Error).name, message: (error as Error).message, issues: (error as { issues?: unknown }).issues };
  }
}

/** Strings that try to fool a bracket matcher: brackets, quotes, escaped quotes, backslashes, unicode, control characters. */
const hostileString = fc.oneof(
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
      '\\"',
      '"}',
      '\u2028',
      '\u0000',
      '\n',
      'é',
      '😀',
      'managedFields',
    ),
  }),
  fc.string(),
);

const jsonLeaf = fc.oneof(
  hostileString,
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);
const hostileJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    jsonLeaf,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** A realistic pod with hostile labels, annotations and managedFields, and extra metadata members in random places. */
const hostilePod = fc
  .record({
    name: fc.string({ minLength: 1 }),
    labels: fc.dictionary(hostileString, hostileString, { maxKeys: 3 }),
    annotations: fc.dictionary(hostileString, hostileString, { maxKeys: 3 }),
    managedFields: fc.array(hostileJson, { maxLength: 3 }),
    extra: fc.dictionary(fc.constantFrom('generateName', 'selfLink', 'managedFields', 'x\\y', 'name\u0000'), hostileJson, {
      maxKeys: 3,
    }),
    managedFirst: fc.boolean(),
  })
  .map(({ name, labels, annotations, managedFields, extra, managedFirst }) => {
    const pod = rawPod({ name });
    const meta = pod['metadata'] as Record<string, unknown>;
    const { managedFields: _drop, ...rest } = meta;
    const metadata = managedFirst
      ? { managedFields, ...extra, ...rest, labels, annotations }
      : { ...rest, labels, annotations, ...extra, managedFields };
    return { ...pod, metadata };
  });

const frameType = fc.constantFrom('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR', 'BOGUS');

describe('[k8s_types: cut what the view drops] watch lines', () => {
  it('[k8s_types: cut what the view drops] cuts managedFields out of a realistic frame before JSON.parse (the fast path is taken)', () => {
    const line = JSON.stringify({ type: 'MODIFIED', object: rawPod({ resourceVersion: '7' }) });
    const keep = metadataKeysRead(podSchema)!;
    expect(keep.has('managedFields')).toBe(false);
    const cut = cutWatchLine(line, keep)!;
    expect(cut.type).toBe('MODIFIED');
    expect(cut.text.length).toBeLessThan(line.length);
    expect(cut.text).not.toContain('managedFields');
    expect(JSON.parse(cut.text).object.spec).toEqual(JSON.parse(line).object.spec);
    expect(parseWatchLine(line, podSchema, { cutUnread: true })).toStrictEqual(readWatchFrame(JSON.parse(line), podSchema));
  });

  it('[k8s_types: cut what the view drops] property: the cut frame is exactly the whole-line frame for hostile pods (same object, same error)', () => {
    fc.assert(
      fc.property(frameType, hostilePod, (type, pod) => {
        const line = JSON.stringify({ type, object: pod });
        expect(viaCut(line, podSchema)).toStrictEqual(wholeLine(line, podSchema));
      }),
      { numRuns: 400 },
    );
  });

  it('[k8s_types: cut what the view drops] property: a corrupted line (a character deleted, inserted or replaced) fails or succeeds exactly as the whole line does', () => {
    const corrupt = fc.tuple(
      frameType,
      hostilePod,
      fc.nat(),
      fc.constantFrom('delete', 'insert', 'replace'),
      fc.constantFrom('{', '}', '[', ']', '"', '\\', ',', ':', ' ', '\u0001', 'x', '0'),
    );
    fc.assert(
      fc.property(corrupt, ([type, pod, at, how, char]) => {
        const line = JSON.stringify({ type, object: pod });
        const i = at % line.length;
        const bad =
          how === 'delete'
            ? line.slice(0, i) + line.slice(i + 1)
            : how === 'insert'
              ? line.slice(0, i) + char + line.slice(i)
              : line.slice(0, i) + char + line.slice(i + 1);
        expect(viaCut(bad, podSchema)).toStrictEqual(wholeLine(bad, podSchema));
      }),
      { numRuns: 1500 },
    );
  });

  it('[k8s_types: cut what the view drops] falls back to the whole line when it cannot prove the cut', () => {
    const keep = metadataKeysRead(podSchema)!;
    const pod = rawPod();
    const escapedKey = JSON.stringify({ type: 'MODIFIED', object: pod }).replace('"managedFields"', '"managed\\u0046ields"');
    const objectFirst = `{"object":${JSON.stringify(pod)},"type":"MODIFIED"}`;
    const spaced = JSON.stringify({ type: 'MODIFIED', object: pod }, null, 1);
    const bookmark = JSON.stringify({
      type: 'BOOKMARK',
      object: { metadata: { resourceVersion: '9', managedFields: [], annotations: { 'k8s.io/initial-events-end': 'true' } } },
    });
    for (const line of [escapedKey, objectFirst, spaced, bookmark]) {
      expect(cutWatchLine(line, keep)).toBeUndefined();
      expect(viaCut(line, podSchema)).toStrictEqual(wholeLine(line, podSchema));
    }
  });

  it('[k8s_types: cut what the view drops] a second `type` after the object decides the frame, as JSON.parse would', () => {
    const line = `{"type":"MODIFIED","object":${JSON.stringify(rawPod())},"type":"ERROR"}`;
    expect(cutWatchLine(line, metadataKeysRead(podSchema)!)?.type).toBe('MODIFIED');
    const frame = parseWatchLine(line, podSchema, { cutUnread: true });
    expect(frame.type).toBe('ERROR');
    expect(frame).toStrictEqual(wholeLine(line, podSchema));
  });

  it('[k8s_types: cut what the view drops] the skip list is derived from the view: unprovable views cut nothing', () => {
    expect(metadataKeysRead(compileSchema(objectSchema({ spec: z.object({}) })))?.has('managedFields')).toBe(false);
    expect(metadataKeysRead(z.looseObject({ metadata: objectMetaSchema }))).toBeUndefined();
    expect(metadataKeysRead(objectSchema({ metadata: z.looseObject({ name: z.string() }) }))).toBeUndefined();
    expect(metadataKeysRead(objectSchema({ metadata: z.record(z.string(), z.unknown()) }))).toBeUndefined();
    expect(metadataKeysRead(objectSchema({ metadata: z.preprocess((v) => v, objectMetaSchema) }))).toBeUndefined();
    expect(metadataKeysRead(z.union([podSchema, z.object({})]))).toBeUndefined();
    // A view without metadata still keeps what every frame reader needs.
    expect([...(metadataKeysRead(z.object({ spec: z.unknown() })) ?? [])].sort()).toEqual([
      'name',
      'namespace',
      'resourceVersion',
    ]);
  });
});

describe('[k8s_types: keep a dropped field] a view that declares a field keeps it', () => {
  it('[k8s_types: keep a dropped field] managedFields declared in the view are read whole, never cut', () => {
    const withManaged = compileSchema(
      objectSchema({ metadata: objectMetaSchema.extend({ managedFields: z.array(z.object({ manager: z.string() })) }) }),
    );
    expect(metadataKeysRead(withManaged)?.has('managedFields')).toBe(true);
    const line = JSON.stringify({ type: 'MODIFIED', object: rawPod() });
    const frame = parseWatchLine(line, withManaged, { cutUnread: true });
    expect(frame.type === 'MODIFIED' && frame.object.metadata.managedFields).toEqual([{ manager: 'kubelet' }]);
    // generateName is still cut for this view: it does not read it.
    const withGenerateName = JSON.stringify({
      type: 'ADDED',
      object: { ...rawPod(), metadata: { ...(rawPod()['metadata'] as object), generateName: 'engine-' } },
    });
    expect(cutWatchLine(withGenerateName, metadataKeysRead(withManaged)!)?.text).not.toContain('generateName');
  });
});

describe('[k8s_types: cut what the view drops] the strict scanner', () => {
  it('[k8s_types: cut what the view drops] property: scanValue accepts exactly one whole JSON value (as JSON.parse does)', () => {
    const nearJson = fc.oneof(
      hostileJson.map((v) => JSON.stringify(v) ?? 'null'),
      fc
        .tuple(
          hostileJson,
          fc.nat(),
          fc.constantFrom('{', '}', '[', ']', '"', '\\', ',', ':', '\u0001', 'e', '-', '.', 'u', '1', ''),
        )
        .map(([v, at, c]) => {
          const text = JSON.stringify(v) ?? 'null';
          const i = at % (text.length + 1);
          return text.slice(0, i) + c + text.slice(i + (at % 2));
        }),
      fc.constantFrom(
        '-',
        '-0',
        '01',
        '1.',
        '.5',
        '1e',
        '1e+',
        '1E-7',
        'tru',
        'nul',
        '"\\u12"',
        '"\\x"',
        '[1,]',
        '{"a":1,}',
        '{"a"}',
        '[]]',
        '"\t"',
        '0.5e10',
      ),
    );
    fc.assert(
      fc.property(nearJson, (text) => {
        let valid: boolean;
        try {
          JSON.parse(text);
          valid = text.trim() === text;
        } catch {
          valid = false;
        }
        expect(scanValue(text, 0) === text.length).toBe(valid);
      }),
      { numRuns: 3000 },
    );
  });

  it('[k8s_types: cut what the view drops] a value nested 100,000 deep is scanned without overflowing the stack', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    expect(scanValue(deep, 0)).toBe(deep.length);
    expect(scanValue(deep.slice(0, -1), 0)).toBe(-1); // one bracket left open
    expect(scanValue(deep.slice(1), 0)).toBe(deep.length - 2); // one value, then a stray `]` after it
  });
});
