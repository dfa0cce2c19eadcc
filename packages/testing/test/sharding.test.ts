import { inShardRanges, shardHash, shardSelector, type ShardRange } from '@reconcile-loop/primitives';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { parseShardSelector } from '../src/shard-selector.js';
import { startApiServer, type ApiServer, type ApiServerOptions } from '../src/index.js';
import { MALFORMED_SHARD_SELECTORS } from '../conformance/shard-cases.js';
import { PODS, WIDGET, call, types, watch } from './helpers.js';

// Sharded LIST/WATCH (KEP-5866) as kube-apiserver 1.37.2 serves it with
// --feature-gates=ShardedListAndWatch=true. The expected errors below are the real server's answers,
// recorded against v1.37.2; the malformed selectors are conformance/shard-cases.ts' list, which the
// e2e sharded-list test compares live.

const Z = '0x0000000000000000';
const H = '0x8000000000000000';
const T = '0x10000000000000000';
const LOWER: ShardRange[] = [{ start: Z, end: H }];
const UPPER: ShardRange[] = [{ start: H, end: T }];
const q = (s: string): string => `shardSelector=${encodeURIComponent(s)}`;

let server: ApiServer;
async function start(o: ApiServerOptions = {}): Promise<ApiServer> {
  server = await startApiServer({ tooLargeResourceVersionWaitMs: 20, ...o });
  return server;
}
afterEach(async () => {
  await server?.close();
});

interface Item {
  metadata: { name: string; uid: string; namespace?: string };
}
const names = (items: Item[]): string[] => items.map((i) => i.metadata.name).sort();

/** The names of `items` whose `field` hashes into `ranges`, computed on the client side. */
function expected(items: Item[], ranges: ShardRange[], field: 'uid' | 'namespace' = 'uid'): string[] {
  return names(items.filter((i) => inShardRanges(shardHash(i.metadata[field] ?? ''), ranges)));
}

describe('shardSelector on LIST', () => {
  it('[testing: shardSelector] a LIST keeps the pods whose FNV-1a 64 uid hash is in a range and echoes the canonical selector in metadata.shardInfo', async () => {
    await start();
    server.seedPods(24);
    const all = (await call(server, 'GET', PODS)).json.items as Item[];
    const lower = expected(all, LOWER);
    // Not vacuous: 24 random uids split between both halves (fails with probability 2^-23).
    expect(lower.length).toBeGreaterThan(0);
    expect(lower.length).toBeLessThan(24);
    for (const ranges of [LOWER, UPPER]) {
      const sel = shardSelector('uid', ranges);
      const a = await call(server, 'GET', `${PODS}?${q(sel)}`);
      expect(a.status).toBe(200);
      expect(a.json.metadata.shardInfo).toEqual({ selector: sel });
      expect(names(a.json.items)).toEqual(expected(all, ranges));
    }
    // Spacing, quotes and parentheses as CEL allows them: the echo is the canonical form, not the request.
    const loose = `(shardRange( object.metadata.uid ,"${Z}",'${H}'))`;
    const a = await call(server, 'GET', `${PODS}?${q(loose)}`);
    expect(a.json.metadata.shardInfo).toEqual({ selector: shardSelector('uid', LOWER) });
    expect(names(a.json.items)).toEqual(lower);
    // Without the parameter (or with it empty) the list is whole and carries no shardInfo.
    for (const path of [PODS, `${PODS}?shardSelector=`]) {
      const b = await call(server, 'GET', path);
      expect(b.json.metadata).not.toHaveProperty('shardInfo');
      expect(b.json.items).toHaveLength(24);
    }
  });

  it('[testing: shardSelector] paged: every page carries shardInfo, no remainingItemCount, and the pages together are the shard', async () => {
    await start();
    server.seedPods(20);
    const all = (await call(server, 'GET', PODS)).json.items as Item[];
    const sel = `${shardSelector('uid', LOWER)} || shardRange(object.metadata.uid, '0xc000000000000000', '${T}')`;
    const ranges = [...LOWER, { start: '0xc000000000000000', end: T }];
    const got: Item[] = [];
    let cont = '';
    for (let page = 0; page < 30; page++) {
      const a = await call(
        server,
        'GET',
        `${PODS}?limit=3&${q(sel)}${cont === '' ? '' : `&continue=${encodeURIComponent(cont)}`}`,
      );
      expect(a.status).toBe(200);
      expect(a.json.metadata.shardInfo).toEqual({ selector: sel });
      expect(a.json.metadata).not.toHaveProperty('remainingItemCount');
      got.push(...a.json.items);
      cont = a.json.metadata.continue ?? '';
      if (cont === '') break;
    }
    expect(cont).toBe('');
    expect(names(got)).toEqual(expected(all, ranges));
  });

  it('[testing: shardSelector] by namespace: all namespaces and custom resources; Table and PartialObjectMetadataList answers carry no shardInfo', async () => {
    await start();
    const ref = server.registerResource(WIDGET);
    const namespaces = [
      'alpha',
      'bravo',
      'charlie',
      'delta',
      'echo',
      'foxtrot',
      'golf',
      'hotel',
      'india',
      'juliet',
      'kilo',
      'lima',
    ];
    for (const ns of namespaces) {
      server.seedPods(1, { namespace: ns });
      server.createObject(ref, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: ns } });
    }
    const sel = shardSelector('namespace', UPPER);
    const inUpper = namespaces.filter((ns) => inShardRanges(shardHash(ns), UPPER)).sort();
    expect(inUpper.length).toBeGreaterThan(0);
    expect(inUpper.length).toBeLessThan(namespaces.length);
    for (const path of ['/api/v1/pods', '/apis/example.com/v1/widgets']) {
      const a = await call(server, 'GET', `${path}?${q(sel)}`);
      expect(a.status).toBe(200);
      expect(a.json.metadata.shardInfo).toEqual({ selector: sel });
      expect((a.json.items as Item[]).map((i) => i.metadata.namespace).sort()).toEqual(inUpper);
    }
    const table = await call(server, 'GET', `/api/v1/pods?${q(sel)}`, {
      headers: { Accept: 'application/json;as=Table;g=meta.k8s.io;v=v1' },
    });
    expect(table.json.kind).toBe('Table');
    expect(table.json.metadata).not.toHaveProperty('shardInfo');
    expect(table.json.rows).toHaveLength(inUpper.length);
    const partial = await call(server, 'GET', `/api/v1/pods?${q(sel)}`, {
      headers: { Accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' },
    });
    expect(partial.json.kind).toBe('PartialObjectMetadataList');
    expect(partial.json.metadata).not.toHaveProperty('shardInfo');
    expect(partial.json.items).toHaveLength(inUpper.length);
  });
});

describe('shardSelector on WATCH', () => {
  it('[testing: shardSelector] ?watch=true, the /watch/ path and watch-list deliver only the shard: initial state and later writes', async () => {
    await start();
    server.seedPods(10);
    const sel = shardSelector('uid', LOWER);
    const paths = [
      `${PODS}?watch=true&${q(sel)}`,
      `/api/v1/watch/namespaces/default/pods?${q(sel)}`,
      `${PODS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&${q(sel)}`,
    ];
    const watches = await Promise.all(paths.map((p) => watch(server, p)));
    for (let i = 10; i < 20; i++) server.createPod({ metadata: { name: `pod-${i}`, namespace: 'default' } });
    const all = (await call(server, 'GET', PODS)).json.items as Item[];
    const want = expected(all, LOWER);
    expect(want.length).toBeGreaterThan(0);
    expect(want.length).toBeLessThan(20);
    for (const [i, w] of watches.entries()) {
      const frames = [];
      // Initial ADDED frames, the end bookmark on watch-list, then the later pods' ADDED frames.
      const count = want.length + (i === 2 ? 1 : 0);
      for (let n = 0; n < count; n++)
        frames.push(
          (
            await w.next().catch((e) => {
              throw new Error(`${paths[i]} frame ${n}: ${e}`);
            })
          ).frame,
        );
      expect(types(frames.map((frame) => ({ raw: '', frame }))).filter((t) => t !== 'ADDED')).toEqual(
        i === 2 ? ['BOOKMARK'] : [],
      );
      expect(
        frames
          .filter((f) => f.type === 'ADDED')
          .map((f) => f.object.metadata.name)
          .sort(),
      ).toEqual(want);
      w.close();
    }
  });
});

describe('malformed shardSelector', () => {
  it('[testing: shardSelector errors] a malformed selector is the real 500 with no reason and `invalid shard selector: …`, on LIST and WATCH alike', async () => {
    await start();
    for (const [sel, message] of MALFORMED_SHARD_SELECTORS) {
      for (const path of [`${PODS}?${q(sel)}`, `${PODS}?watch=true&${q(sel)}`, `${PODS}?limit=1&continue=garbage&${q(sel)}`]) {
        const a = await call(server, 'GET', path);
        expect({ status: a.status, body: a.json }, `${path}`).toEqual({
          status: 500,
          body: {
            kind: 'Status',
            apiVersion: 'v1',
            metadata: {},
            status: 'Failure',
            message: `invalid shard selector: ${message}`,
            code: 500,
          },
        });
      }
    }
  });

  it('[testing: shardSelector errors] the parser never throws: every input is a selector whose canonical form parses to itself, or an error', () => {
    const token = fc.constantFrom(
      'shardRange',
      '(',
      ')',
      ',',
      '||',
      '|',
      '&&',
      '.',
      '.?',
      'object.metadata.uid',
      'object.metadata.namespace',
      `'${Z}'`,
      `'${H}'`,
      `"${T}"`,
      "'",
      '"""',
      "r'",
      "b'",
      '\\u00e9',
      '\\x',
      '0x',
      '1u',
      '9223372036854775808',
      '-',
      '!',
      '[',
      ']',
      '{',
      '}',
      ':',
      '?',
      ' ',
      '\n',
      '//',
      'in',
      'as',
      '`',
      '@',
      '\u00a0',
      '\ud800',
    );
    const input = fc.oneof(
      fc.array(token, { maxLength: 24 }).map((t) => t.join('')),
      fc.string({ maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 20 }),
    );
    fc.assert(
      fc.property(input, (s) => {
        const r = parseShardSelector(s);
        if ('error' in r) {
          expect(typeof r.error).toBe('string');
          return;
        }
        const again = parseShardSelector(r.canonical);
        expect(again).toEqual(r);
      }),
      { numRuns: 2_000 },
    );
    // Deep nesting stops at CEL's recursion limit instead of the stack's.
    const deep = parseShardSelector(`${'('.repeat(100_000)}x${')'.repeat(100_000)}`);
    expect(deep).toHaveProperty('error');
  });
});

describe('shardSelector on DELETE of a collection', () => {
  it('[testing: shardSelector delete-collection] DELETE of a collection with a shardSelector deletes the shard only and answers with it; a malformed one deletes nothing', async () => {
    await start();
    server.seedPods(24);
    const all = (await call(server, 'GET', PODS)).json.items as Item[];
    const bad = await call(server, 'DELETE', `${PODS}?${q('x')}`);
    expect(bad.status).toBe(500);
    expect(bad.json.message).toMatch(/^invalid shard selector: /);
    expect((await call(server, 'GET', PODS)).json.items).toHaveLength(24);
    const a = await call(server, 'DELETE', `${PODS}?${q(shardSelector('uid', LOWER))}`);
    expect(a.status).toBe(200);
    expect(names(a.json.items)).toEqual(expected(all, LOWER));
    expect(names((await call(server, 'GET', PODS)).json.items)).toEqual(expected(all, UPPER));
  });

  it('[testing: ShardedListAndWatch off] the gate off: DELETE of a collection ignores a shardSelector and deletes every selected pod', async () => {
    await start({ shardedListAndWatch: false });
    server.seedPods(6);
    const a = await call(server, 'DELETE', `${PODS}?${q(shardSelector('uid', LOWER))}`);
    expect(a.status).toBe(200);
    expect(a.json.items).toHaveLength(6);
    expect((await call(server, 'GET', PODS)).json.items).toHaveLength(0);
  });
});

describe('shardedListAndWatch: false', () => {
  it('[testing: ShardedListAndWatch off] the gate off ignores shardSelector, valid or not: every object, no shardInfo, on LIST and WATCH', async () => {
    await start({ shardedListAndWatch: false });
    server.seedPods(6);
    for (const sel of [shardSelector('uid', LOWER), 'not a selector', '   ']) {
      const a = await call(server, 'GET', `${PODS}?${q(sel)}`);
      expect(a.status).toBe(200);
      expect(a.json.metadata).not.toHaveProperty('shardInfo');
      expect(a.json.items).toHaveLength(6);
      const w = await watch(server, `${PODS}?watch=true&${q(sel)}`);
      expect(w.status).toBe(200);
      const frames = [];
      for (let n = 0; n < 6; n++) frames.push((await w.next()).frame.object.metadata.name);
      expect(frames.sort()).toEqual(['pod-0', 'pod-1', 'pod-2', 'pod-3', 'pod-4', 'pod-5']);
      w.close();
    }
  });
});
