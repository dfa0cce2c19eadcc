import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidKeyError, ReconcileLoopError, objectKey, parseKey } from '../src/index.js';

// A Kubernetes name or namespace: never empty, never a '/'.
const segment = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes('/'));

describe('primitives: object keys', () => {
  it('[primitives: object key] objectKey writes namespace/name (name alone when cluster-scoped) from a NamespacedName or an object with metadata', () => {
    expect(objectKey({ namespace: 'ml', name: 'web' })).toBe('ml/web');
    expect(objectKey({ name: 'node-1' })).toBe('node-1');
    expect(objectKey({ namespace: '', name: 'node-1' })).toBe('node-1');
    const pod = { metadata: { namespace: 'ml', name: 'web', resourceVersion: '4' } };
    expect(objectKey(pod)).toBe('ml/web');
    expect(objectKey({ metadata: { name: 'ml' } })).toBe('ml');
  });

  it('[primitives: object key] parseKey(objectKey(x)) names x again, for every namespace and name', () => {
    fc.assert(
      fc.property(fc.option(segment, { nil: undefined }), segment, (namespace, name) => {
        const key = objectKey({ namespace, name });
        expect(parseKey(key)).toEqual(namespace === undefined ? { name } : { namespace, name });
        expect(objectKey(parseKey(key))).toBe(key);
      }),
      { numRuns: 300 },
    );
  });

  it("[primitives: object key] parseKey refuses what no object key is (InvalidKeyError, RL_KEY_INVALID); '/name' reads as cluster-scoped like client-go's SplitMetaNamespaceKey", () => {
    for (const bad of ['', 'a/b/c', 'ns/', '/']) {
      expect(() => parseKey(bad)).toThrow(InvalidKeyError);
      try {
        parseKey(bad);
      } catch (error) {
        expect(error).toBeInstanceOf(ReconcileLoopError);
        expect((error as InvalidKeyError).code).toBe('RL_KEY_INVALID');
        expect((error as InvalidKeyError).key).toBe(bad);
      }
    }
    expect(parseKey('/node-1')).toEqual({ name: 'node-1' });
    expect(() => parseKey(42 as unknown as string)).toThrow(InvalidKeyError);
  });
});
