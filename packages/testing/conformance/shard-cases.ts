/**
 * Conformance cases for sharded LIST/WATCH (KEP-5866, `ListOptions.shardSelector`).
 * `SHARD_CASES` need a kube-apiserver started with `--feature-gates=ShardedListAndWatch=true`
 * (1.36 or newer) and the embedded server's default (`shardedListAndWatch: true`); e2e's
 * sharded-list test runs them so. `SHARD_OFF_CASES` hold on every default server (the gate off;
 * 1.35 has no gate) and the embedded one with `shardedListAndWatch: false`; they are part of `CASES`.
 *
 * uids differ between the servers, so a case answers what must agree: the status, the echoed
 * `shardInfo`, and whether the objects returned are exactly those whose FNV-1a 64 hash (computed
 * here, by the client) falls in the selected ranges.
 */
import { inShardRanges, shardHash, shardSelector, type ShardRange } from '@reconcile-loop/primitives';
import type { ConformanceCase } from './case.js';
import type { Target } from './target.js';

/** The apiserver's hash of a shard field, for the e2e layer (which reaches primitives through this suite). */
export { shardHash };

const Z = '0x0000000000000000';
const H = '0x8000000000000000';
const T = '0x10000000000000000';
const LOWER: ShardRange[] = [{ start: Z, end: H }];
const UPPER: ShardRange[] = [{ start: H, end: T }];
const LOWER_SEL = shardSelector('uid', LOWER);
const q = (s: string): string => `shardSelector=${encodeURIComponent(s)}`;

/**
 * Malformed selectors and the message kube-apiserver v1.37.2 (gate on) answers each with, after
 * `invalid shard selector: `, in a 500 without a reason, for LIST and WATCH alike.
 */
export const MALFORMED_SHARD_SELECTORS: ReadonlyArray<readonly [string, string]> = [
  ['   ', 'empty shard selector is not allowed; omit the parameter for unfiltered lists'],
  ['x', 'unexpected expression kind 3; expected shardRange() call or || operator'],
  ["'a'", 'unexpected expression kind 5; expected shardRange() call or || operator'],
  [`shardRange(object.metadata.uid, '${Z}')`, 'shardRange() requires exactly 3 arguments, got 2'],
  [
    `shardRange(object.metadata.name, '${Z}', '${H}')`,
    'unsupported field path "object.metadata.name"; supported: object.metadata.uid, object.metadata.namespace',
  ],
  [
    `shardRange(object.metadata.uid, '0x0', '${H}')`,
    `hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)`,
  ],
  [`shardRange(object.metadata.uid, '${H}', '${Z}')`, `shard range start ${H} must be less than end ${Z}`],
  [`shardRange(object.metadata.uid, '${Z}', '${Z}')`, `shard range start ${Z} must be less than end ${Z}`],
  [
    `shardRange(object.metadata.uid, '0x000000000000000A', '${H}')`,
    `hexStart: invalid hex character "A" in "0x000000000000000A"`,
  ],
  [
    `shardRange(object.metadata.uid, '0x20000000000000000', '${T}')`,
    `hexStart: 17-digit hex value must be '0x10000000000000000' (2^64), got "0x20000000000000000"`,
  ],
  [
    `shardRange(object.metadata.uid, '0x000000000000000000', '${H}')`,
    'hexStart: hex value too long (18 chars, max 17): "000000000000000000"',
  ],
  [`shardRange(object.metadata.uid, 0, '${H}')`, 'hexStart must be a string literal, got int64'],
  [`shardRange(object.metadata.uid, 0u, '${H}')`, 'hexStart must be a string literal, got uint64'],
  [`shardRange(object.metadata.uid, null, '${H}')`, 'hexStart must be a string literal, got structpb.NullValue'],
  [`shardRange(object.metadata.uid, b'${Z}', '${H}')`, 'hexStart must be a string literal, got []uint8'],
  [`shardRange(object.metadata.uid, x, '${H}')`, `hexStart must be a string literal (e.g. '0xff'), got expression kind 3`],
  [`shardRange(object.metadata.uid, '${Z}', 'x')`, `hexEnd must have '0x' prefix, got "x"`],
  [
    `shardRange(object["metadata"].uid, '${Z}', '${H}')`,
    'shardRange() first argument: expected field path (e.g. object.metadata.uid), got expression kind 1',
  ],
  [`${LOWER_SEL} && x`, 'unsupported function "_&&_"; only shardRange() and || are allowed'],
  [`!${LOWER_SEL}`, 'unsupported function "!_"; only shardRange() and || are allowed'],
  [`[${LOWER_SEL}]`, 'unexpected expression kind 4; expected shardRange() call or || operator'],
  [
    `${LOWER_SEL} || shardRange(object.metadata.namespace, '${H}', '${T}')`,
    'all shard ranges must use the same field, got "object.metadata.uid" and "object.metadata.namespace"',
  ],
  ['as', 'CEL parse error: reserved identifier: as'],
  [`shardRange(object.metadata.uid, '${Z}', '${H}'`, "CEL parse error: Syntax error: missing ')' at '<EOF>'"],
  [`${LOWER_SEL} | x`, "CEL parse error: Syntax error: token recognition error at: '| '"],
  [
    `${LOWER_SEL} ||`,
    "CEL parse error: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}",
  ],
  ['x.?y', "CEL parse error: unsupported syntax '.?'"],
  [`shardRange(object.metadata.in, '${Z}', '${H}')`, "CEL parse error: Syntax error: no viable alternative at input '.in'"],
];

interface Item {
  metadata: { name: string; uid: string; namespace?: string };
}

/** `count` pods named p0…; returns every pod of the namespace. */
async function pods(t: Target, ns: string, count: number, from = 0): Promise<Item[]> {
  for (let i = from; i < from + count; i++) {
    const a = await t.request('POST', `/api/v1/namespaces/${ns}/pods`, {
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `p${i}` },
        spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.9' }] },
      },
    });
    if (a.status !== 201) throw new Error(`create p${i}: ${a.status} ${a.text}`);
  }
  const all = await t.request('GET', `/api/v1/namespaces/${ns}/pods`);
  return all.json.items as Item[];
}

const names = (items: Item[]): string[] => items.map((i) => i.metadata.name).sort();
const inRanges = (items: Item[], ranges: ShardRange[]): string[] =>
  names(items.filter((i) => inShardRanges(shardHash(i.metadata.uid), ranges)));

function status(a: { status: number; json: { reason?: string; message?: string } | undefined }): unknown {
  return { status: a.status, reason: a.json?.reason, message: a.json?.message };
}

type Frame = { type: string; object: Record<string, unknown> };
const addedNames = (frames: Frame[]): string[] =>
  frames
    .filter((f) => f.type === 'ADDED')
    .map((f) => (f.object as unknown as Item).metadata.name)
    .sort();

/** A watch from the namespace's current resourceVersion on `path`, while 8 more pods are created: its ADDED names are the new pods in the lower half. */
async function watchNew(t: Target, ns: string, path: (rv: string) => string): Promise<unknown> {
  const before = await pods(t, ns, 0);
  const rv = (await t.request('GET', `/api/v1/namespaces/${ns}/pods`)).json.metadata.resourceVersion as string;
  const watching = t.frames(path(rv), 4_000);
  const all = await pods(t, ns, 8);
  const fresh = all.filter((i) => !before.some((b) => b.metadata.name === i.metadata.name));
  const frames = await watching;
  return { exactlyTheShard: JSON.stringify(addedNames(frames)) === JSON.stringify(inRanges(fresh, LOWER)) };
}

export const SHARD_CASES: ConformanceCase[] = [
  {
    id: 'shard-list-uid',
    title:
      'LIST with shardRange on metadata.uid: each half keeps the pods whose uid hash is in it, shardInfo echoes the selector',
    run: async (t, ns) => {
      const all = await pods(t, ns, 12);
      const out: unknown[] = [];
      for (const ranges of [LOWER, UPPER]) {
        const sel = shardSelector('uid', ranges);
        const a = await t.request('GET', `/api/v1/namespaces/${ns}/pods?${q(sel)}`);
        out.push({
          status: a.status,
          shardInfo: a.json?.metadata?.shardInfo,
          exactlyTheShard: JSON.stringify(names(a.json.items)) === JSON.stringify(inRanges(all, ranges)),
        });
      }
      return out;
    },
  },
  {
    id: 'shard-list-canonical',
    title: 'LIST with a selector spelled with spaces, double quotes, parentheses and a comment: shardInfo is the canonical form',
    run: async (t, ns) => {
      const all = await pods(t, ns, 6);
      const loose = `(shardRange( object.metadata.uid ,"${Z}",'${H}')) || ((shardRange(object . metadata . uid, r'0xc000000000000000', '''${T}'''))) // tail`;
      const a = await t.request('GET', `/api/v1/namespaces/${ns}/pods?${q(loose)}`);
      const ranges = [...LOWER, { start: '0xc000000000000000', end: T }];
      return {
        status: a.status,
        shardInfo: a.json?.metadata?.shardInfo,
        exactlyTheShard: JSON.stringify(names(a.json.items)) === JSON.stringify(inRanges(all, ranges)),
      };
    },
  },
  {
    id: 'shard-list-paged',
    title: 'paged LIST with a shardSelector: shardInfo on every page, the pages together are the shard',
    run: async (t, ns) => {
      const all = await pods(t, ns, 10);
      const got: Item[] = [];
      const pages: unknown[] = [];
      let cont = '';
      for (let i = 0; i < 12; i++) {
        const a = await t.request(
          'GET',
          `/api/v1/namespaces/${ns}/pods?limit=2&${q(LOWER_SEL)}${cont === '' ? '' : `&continue=${encodeURIComponent(cont)}`}`,
        );
        // Not remainingItemCount: 1.36.3 counts every remaining object, other shards' too; 1.37.2 sends none (README).
        pages.push({ status: a.status, shardInfo: a.json?.metadata?.shardInfo });
        got.push(...(a.json.items as Item[]));
        cont = a.json?.metadata?.continue ?? '';
        if (cont === '') break;
      }
      // The page count depends on the uids (how many fall in the half); what each page says does not.
      return {
        pageShapes: [...new Set(pages.map((p) => JSON.stringify(p)))],
        exactlyTheShard: JSON.stringify(names(got)) === JSON.stringify(inRanges(all, LOWER)),
      };
    },
  },
  {
    id: 'shard-list-namespace',
    title: 'LIST of all pods with shardRange on metadata.namespace: every item is in a namespace hashing into the range',
    run: async (t, ns) => {
      await pods(t, ns, 2);
      const sel = shardSelector('namespace', UPPER);
      const a = await t.request('GET', `/api/v1/pods?${q(sel)}`);
      const items = a.json.items as Item[];
      return {
        status: a.status,
        shardInfo: a.json?.metadata?.shardInfo,
        allInRange: items.every((i) => inShardRanges(shardHash(i.metadata.namespace ?? ''), UPPER)),
        oursIncludedIffInRange: items.some((i) => i.metadata.namespace === ns) === inShardRanges(shardHash(ns), UPPER),
      };
    },
  },
  {
    id: 'shard-list-table',
    title: 'LIST as a Table with a shardSelector: the rows are the shard, the Table carries no shardInfo',
    run: async (t, ns) => {
      const all = await pods(t, ns, 6);
      const a = await t.request('GET', `/api/v1/namespaces/${ns}/pods?${q(LOWER_SEL)}`, {
        accept: 'application/json;as=Table;g=meta.k8s.io;v=v1',
      });
      const rows = (a.json.rows as Array<{ cells: unknown[] }>).map((r) => String(r.cells[0])).sort();
      return {
        status: a.status,
        kind: a.json.kind,
        shardInfo: a.json.metadata?.shardInfo,
        exactlyTheShard: JSON.stringify(rows) === JSON.stringify(inRanges(all, LOWER)),
      };
    },
  },
  {
    id: 'shard-watch',
    title: 'WATCH (?watch=true) with a shardSelector from a resourceVersion: only the new pods in the shard arrive',
    run: (t, ns) =>
      watchNew(t, ns, (rv) => `/api/v1/namespaces/${ns}/pods?watch=true&resourceVersion=${rv}&timeoutSeconds=3&${q(LOWER_SEL)}`),
  },
  {
    id: 'shard-watch-path',
    title: 'WATCH on the /watch/ path with a shardSelector: only the new pods in the shard arrive',
    run: (t, ns) =>
      watchNew(t, ns, (rv) => `/api/v1/watch/namespaces/${ns}/pods?resourceVersion=${rv}&timeoutSeconds=3&${q(LOWER_SEL)}`),
  },
  {
    id: 'shard-watch-list',
    title: 'watch-list with a shardSelector: the initial ADDED frames are the shard, then the initial-events-end bookmark',
    run: async (t, ns) => {
      const all = await pods(t, ns, 10);
      const frames = await t.frames(
        `/api/v1/namespaces/${ns}/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2&${q(LOWER_SEL)}`,
        5_000,
      );
      const end = frames.findIndex(
        (f) =>
          f.type === 'BOOKMARK' &&
          (f.object['metadata'] as { annotations?: Record<string, string> }).annotations?.['k8s.io/initial-events-end'] ===
            'true',
      );
      const head = end < 0 ? frames : frames.slice(0, end);
      return { ended: end >= 0, exactlyTheShard: JSON.stringify(addedNames(head)) === JSON.stringify(inRanges(all, LOWER)) };
    },
  },
  {
    id: 'shard-delete-collection',
    title:
      'DELETE of a collection with a shardSelector deletes the shard only (DeleteCollection lists with the same options); a malformed selector deletes nothing',
    run: async (t, ns) => {
      const all = await pods(t, ns, 10);
      const malformed = await t.request('DELETE', `/api/v1/namespaces/${ns}/pods?${q('x')}`);
      const afterMalformed = (await t.request('GET', `/api/v1/namespaces/${ns}/pods`)).json.items as Item[];
      const a = await t.request('DELETE', `/api/v1/namespaces/${ns}/pods?${q(LOWER_SEL)}`);
      const left = (await t.request('GET', `/api/v1/namespaces/${ns}/pods`)).json.items as Item[];
      return {
        malformed: status(malformed),
        malformedDeletedNothing: afterMalformed.length === all.length,
        status: a.status,
        kind: a.json?.kind,
        deletedTheShard: JSON.stringify(names(a.json.items)) === JSON.stringify(inRanges(all, LOWER)),
        leftTheOtherHalf: JSON.stringify(names(left)) === JSON.stringify(inRanges(all, UPPER)),
      };
    },
  },
  {
    id: 'shard-malformed',
    title:
      'malformed shardSelectors (syntax, walker, bounds, fields): 500, no reason, `invalid shard selector: …`, on LIST, paged LIST and WATCH',
    run: async (t, ns) => {
      const out: unknown[] = [];
      for (const [sel] of MALFORMED_SHARD_SELECTORS) {
        const base = `/api/v1/namespaces/${ns}/pods`;
        for (const path of [
          `${base}?${q(sel)}`,
          `${base}?limit=1&continue=bogus&${q(sel)}`,
          `${base}?watch=true&timeoutSeconds=1&${q(sel)}`,
        ])
          out.push({
            sel,
            path: path.slice(base.length, path.indexOf('shardSelector')),
            ...(status(await t.request('GET', path)) as object),
          });
      }
      return out;
    },
  },
];

export const SHARD_OFF_CASES: ConformanceCase[] = [
  {
    id: 'shard-ignored-delete-collection',
    title:
      'without the ShardedListAndWatch gate, DELETE of a collection ignores a shardSelector and deletes every selected pod: a sharded client must not rely on one there',
    run: async (t, ns) => {
      const all = await pods(t, ns, 4);
      const a = await t.request('DELETE', `/api/v1/namespaces/${ns}/pods?${q(LOWER_SEL)}`);
      const left = (await t.request('GET', `/api/v1/namespaces/${ns}/pods`)).json.items as Item[];
      return { status: a.status, deleted: names(a.json.items), every: names(all), left: names(left) };
    },
  },
  {
    id: 'shard-ignored',
    title:
      'without the ShardedListAndWatch gate a shardSelector, valid or not, is ignored: every pod, no shardInfo, LIST and WATCH',
    run: async (t, ns) => {
      await pods(t, ns, 4);
      const out: unknown[] = [];
      for (const sel of [LOWER_SEL, 'not a selector', '   ']) {
        const a = await t.request('GET', `/api/v1/namespaces/${ns}/pods?${q(sel)}`);
        const frames = await t.frames(`/api/v1/namespaces/${ns}/pods?watch=true&timeoutSeconds=1&${q(sel)}`, 3_000);
        out.push({
          status: a.status,
          shardInfo: a.json?.metadata?.shardInfo,
          items: names(a.json.items),
          watched: addedNames(frames),
        });
      }
      return out;
    },
  },
];
