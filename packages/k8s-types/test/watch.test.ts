import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  describeIssue,
  InvalidObjectError,
  isInvalidObjectError,
  isMalformedWatchFrameError,
  MalformedWatchFrameError,
  parseWatchLine,
  podSchema,
  readWatchFrame,
  watchFrameSchema,
} from './all.js';
import { rawPod } from './fixtures.js';

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('readWatchFrame', () => {
  it('[k8s_reflector: Watch frame shape] reads type, cursor and object from an ADDED / MODIFIED / DELETED frame', () => {
    for (const type of ['ADDED', 'MODIFIED', 'DELETED'] as const) {
      const frame = readWatchFrame({ type, object: rawPod({ resourceVersion: '42' }) }, podSchema);
      expect(frame).toMatchObject({ type, resourceVersion: '42', object: { metadata: { name: 'engine-0' } } });
    }
  });

  it('[k8s_reflector: Frame payload type] a BOOKMARK carries a bare cursor and is not validated as a pod', () => {
    const frame = readWatchFrame(
      {
        type: 'BOOKMARK',
        object: {
          kind: 'Pod',
          apiVersion: 'v1',
          metadata: { resourceVersion: '77', annotations: { 'k8s.io/initial-events-end': 'true' } },
        },
      },
      podSchema,
    );
    expect(frame).toEqual({ type: 'BOOKMARK', resourceVersion: '77' });
  });

  it('[k8s_reflector: Frame payload type] an ERROR carries a Status: code, reason, message and causes (wire name of Go Causes[].Type)', () => {
    const frame = readWatchFrame(
      {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code: 504,
          reason: 'Timeout',
          message: 'Too large resource version: 10, current: 5',
          details: {
            causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
            retryAfterSeconds: 1,
          },
        },
      },
      podSchema,
    );
    expect(frame).toEqual({
      type: 'ERROR',
      status: {
        code: 504,
        reason: 'Timeout',
        message: 'Too large resource version: 10, current: 5',
        details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 },
      },
    });
  });

  it('[k8s_reflector: Poison objects quarantined] a pod frame whose object does not validate raises a typed error naming the object, its resourceVersion and its issues', () => {
    const pod = rawPod({ name: 'broken', namespace: 'ns', resourceVersion: '31' });
    (pod.status as Record<string, unknown>).containerStatuses = [{ name: 'engine', ready: true, restartCount: 'many' }];
    const error = thrown(() => readWatchFrame({ type: 'MODIFIED', object: pod }, podSchema));
    expect(error).toBeInstanceOf(InvalidObjectError);
    expect(isInvalidObjectError(error)).toBe(true);
    expect(error).toMatchObject({
      code: 'RL_TYPES_OBJECT_INVALID',
      objectKey: 'ns/broken',
      resourceVersion: '31',
      frameType: 'MODIFIED',
    });
    const issues = (error as InvalidObjectError).issues;
    expect(issues[0]?.path).toEqual(['status', 'containerStatuses', 0, 'restartCount']);
    expect(describeIssue(issues[0]!)).toMatch(/^status\.containerStatuses\.0\.restartCount: .*number/);
    expect(describeIssue({ path: [], message: 'bad' })).toBe('<root>: bad');
    // Nothing readable: no key, no resourceVersion, still typed.
    expect(
      thrown(() => readWatchFrame({ type: 'ADDED', object: { metadata: { resourceVersion: '4' } } }, podSchema)),
    ).toMatchObject({
      code: 'RL_TYPES_OBJECT_INVALID',
      objectKey: undefined,
      resourceVersion: '4',
    });
  });

  it('[k8s_reflector: Retry-After honoured] a Status carries details.retryAfterSeconds', () => {
    const frame = readWatchFrame(
      { type: 'ERROR', object: { kind: 'Status', code: 429, reason: 'TooManyRequests', details: { retryAfterSeconds: 7 } } },
      podSchema,
    );
    expect(frame).toEqual({
      type: 'ERROR',
      status: { code: 429, reason: 'TooManyRequests', details: { causes: [], retryAfterSeconds: 7 } },
    });
  });

  it('[k8s_reflector: watchHandler per-event metadata failure] an unreadable envelope is a MalformedWatchFrameError carrying whatever cursor it had', () => {
    const unknownType = thrown(() =>
      readWatchFrame({ type: 'SHRUGGED', object: { metadata: { resourceVersion: '9' } } }, podSchema),
    );
    expect(isMalformedWatchFrameError(unknownType)).toBe(true);
    expect(unknownType).toMatchObject({ code: 'RL_TYPES_WATCH_FRAME_MALFORMED', frameType: 'SHRUGGED', resourceVersion: '9' });

    const noCursor = thrown(() => readWatchFrame({ type: 'ADDED', object: { metadata: { name: 'x' } } }, podSchema));
    expect(noCursor).toBeInstanceOf(MalformedWatchFrameError);
    expect(noCursor).toMatchObject({ frameType: 'ADDED', resourceVersion: undefined });

    expect(thrown(() => readWatchFrame('not an object', podSchema))).toBeInstanceOf(MalformedWatchFrameError);
    expect(thrown(() => parseWatchLine('{"type":"ADDED",', podSchema))).toBeInstanceOf(MalformedWatchFrameError);
  });

  it('[k8s_reflector: Watch frame shape] readWatchFrame accepts exactly the frames the envelope schema accepts, with the same type and cursor', () => {
    const cursor = fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.anything());
    const metadata = fc.oneof(fc.record({ resourceVersion: cursor }, { requiredKeys: [] }), fc.anything());
    const object = fc.oneof(
      fc.record({ metadata, code: fc.oneof(fc.integer(), fc.string()) }, { requiredKeys: [] }),
      fc.anything(),
    );
    const type = fc.oneof(fc.constantFrom('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR', 'added', ''), fc.anything());
    const frame = fc.oneof(fc.record({ type, object }, { requiredKeys: [] }), fc.anything());
    fc.assert(
      fc.property(frame, (raw) => {
        const envelope = watchFrameSchema.safeParse(raw);
        let read: unknown;
        try {
          read = readWatchFrame(raw, z.unknown());
        } catch (error) {
          expect(isMalformedWatchFrameError(error)).toBe(true);
          expect(envelope.success).toBe(false);
          return;
        }
        expect(envelope.success).toBe(true);
        const expected = envelope.data!;
        expect(read).toMatchObject(
          expected.type === 'ERROR'
            ? { type: 'ERROR' }
            : { type: expected.type, resourceVersion: expected.object.metadata.resourceVersion },
        );
      }),
      { numRuns: 2000 },
    );
  });

  it('[k8s_reflector: Watch frame shape] the envelope schema reads only the cursor of a pod frame, not the pod', () => {
    const envelope = watchFrameSchema.parse({ type: 'ADDED', object: rawPod({ resourceVersion: '5' }) });
    expect(envelope).toEqual({ type: 'ADDED', object: { metadata: { resourceVersion: '5' } } });
  });
});
