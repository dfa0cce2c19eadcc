/**
 * Conformance cases for watch-list (the streaming initial list: `sendInitialEvents=true`): the
 * parameter validation, the initial events and their end marker per resourceVersion, and what a
 * server does without `allowWatchBookmarks`. Same requests on both servers, per personality.
 */
import type { ConformanceCase } from './case.js';
import type { Target } from './target.js';

type Frame = { type: string; object: Record<string, unknown> };

const WATCH_LIST = 'watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true';

function meta(f: Frame): { name?: string; resourceVersion?: string; annotations?: Record<string, string> } {
  return (f.object['metadata'] ?? {}) as { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
}

/** Two pods; returns the larger of their resourceVersions. */
async function twoPods(t: Target, ns: string): Promise<number> {
  let rv = 0;
  for (const name of ['wl-a', 'wl-b']) {
    const a = await t.request('POST', `/api/v1/namespaces/${ns}/pods`, {
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.9' }] },
      },
    });
    if (a.status !== 201) throw new Error(`create ${name}: ${a.status} ${a.text}`);
    rv = Math.max(rv, Number(a.json?.metadata?.resourceVersion));
  }
  return rv;
}

/**
 * The frames up to and including the initial-events-end bookmark (later bookmarks depend on the
 * watch cache's timing): the frame types, the ADDED names, the annotation, and whether the
 * bookmark's resourceVersion is at least the newest pod's (NotOlderThan).
 */
function initialPhase(frames: Frame[], newest: number): unknown {
  const end = frames.findIndex((f) => f.type === 'BOOKMARK' && meta(f).annotations?.['k8s.io/initial-events-end'] === 'true');
  const head = end < 0 ? frames : frames.slice(0, end + 1);
  return {
    types: head.map((f) => f.type),
    added: head
      .filter((f) => f.type === 'ADDED')
      .map((f) => meta(f).name)
      .sort(),
    endAnnotations: end < 0 ? null : meta(frames[end]!).annotations,
    endNotOlder: end < 0 ? null : Number(meta(frames[end]!).resourceVersion) >= newest,
  };
}

function status(a: {
  status: number;
  json: { reason?: string; message?: string; details?: { causes?: unknown } } | undefined;
}): unknown {
  return { status: a.status, reason: a.json?.reason, message: a.json?.message, causes: a.json?.details?.causes };
}

export const WATCH_LIST_CASES: ConformanceCase[] = [
  ...(['', '0', 'newest'] as const).map(
    (rv): ConformanceCase => ({
      id: `watch-list-rv-${rv === '' ? 'empty' : rv}`,
      title: `watch-list from resourceVersion ${rv === 'newest' ? "N (a pod's)" : JSON.stringify(rv)}: the state as ADDED, then a BOOKMARK annotated initial-events-end at a resourceVersion not older than the state`,
      run: async (t, ns) => {
        const newest = await twoPods(t, ns);
        const from = rv === 'newest' ? String(newest) : rv;
        const frames = await t.frames(
          `/api/v1/namespaces/${ns}/pods?${WATCH_LIST}&resourceVersion=${from}&timeoutSeconds=2`,
          6_000,
        );
        return initialPhase(frames, newest);
      },
    }),
  ),
  {
    id: 'watch-list-no-bookmarks',
    title: 'watch-list without allowWatchBookmarks: 200, the initial ADDED frames, no initial-events-end bookmark',
    run: async (t, ns) => {
      const newest = await twoPods(t, ns);
      const a = await t.request(
        'GET',
        `/api/v1/namespaces/${ns}/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1`,
        { maxMs: 4_000 },
      );
      const frames = a.text
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Frame);
      return { status: a.status, ...(initialPhase(frames, newest) as object) };
    },
  },
  {
    id: 'watch-list-needs-match',
    title: 'sendInitialEvents without resourceVersionMatch=NotOlderThan is 422 on resourceVersionMatch',
    run: async (t, ns) =>
      status(await t.request('GET', `/api/v1/namespaces/${ns}/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true`)),
  },
  {
    id: 'watch-list-exact',
    title: 'sendInitialEvents with resourceVersionMatch=Exact is 422 with two causes',
    run: async (t, ns) =>
      status(
        await t.request(
          'GET',
          `/api/v1/namespaces/${ns}/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=Exact&allowWatchBookmarks=true`,
        ),
      ),
  },
  {
    id: 'watch-match-without-sie',
    title: 'resourceVersionMatch on a watch without sendInitialEvents is 422',
    run: async (t, ns) =>
      status(
        await t.request('GET', `/api/v1/namespaces/${ns}/pods?watch=true&resourceVersionMatch=NotOlderThan&resourceVersion=1`),
      ),
  },
  {
    id: 'list-sends-initial-events',
    title: 'sendInitialEvents on a LIST is 422',
    run: async (t, ns) => status(await t.request('GET', `/api/v1/namespaces/${ns}/pods?sendInitialEvents=true`)),
  },
  {
    id: 'watch-list-sie-false',
    title: 'sendInitialEvents=false from resourceVersion "": no initial events, only what happens after',
    run: async (t, ns) => {
      await twoPods(t, ns);
      const watching = t.frames(
        `/api/v1/namespaces/${ns}/pods?watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&timeoutSeconds=2`,
        5_000,
      );
      await new Promise((r) => setTimeout(r, 500));
      await t.request('DELETE', `/api/v1/namespaces/${ns}/pods/wl-a?gracePeriodSeconds=0`);
      return (await watching).map((f) => [f.type, meta(f).name]);
    },
  },
  {
    id: 'watch-list-future-rv',
    title: 'watch-list from a future resourceVersion: an in-band 504 ResourceVersionTooLarge ERROR frame',
    run: async (t, ns) => {
      const frames = await t.frames(
        `/api/v1/namespaces/${ns}/pods?${WATCH_LIST}&resourceVersion=999999999&timeoutSeconds=8`,
        12_000,
      );
      return frames.map((f) => {
        const details = f.object['details'] as { causes?: Array<{ reason?: string }> } | undefined;
        return [f.type, f.object['code'], f.object['reason'], details?.causes?.map((c) => c.reason)];
      });
    },
  },
];
