/**
 * Conformance cases for the metadata-only representation (`PartialObjectMetadata`), what
 * controller-runtime's metadata client and kube-rs's `metadata_watcher` ask for: a LIST with
 * `as=PartialObjectMetadataList`, a GET and a WATCH with `as=PartialObjectMetadata`. Compared:
 * the types of the answer and of each object, the object's top-level keys (no `data`, no `spec`)
 * and its metadata keys (but `managedFields`, see {@link shape}), so a field the embedded server
 * added or dropped shows as a DIFF.
 */
import type { ConformanceCase } from './case.js';
import type { Target } from './target.js';

const OBJECT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
const LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

/** Two labelled configmaps; returns the revision before them. */
async function twoConfigMaps(t: Target, ns: string): Promise<string> {
  const before = await t.request('GET', `/api/v1/namespaces/${ns}/configmaps`);
  for (const name of ['pm-a', 'pm-b']) {
    const a = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps`, {
      body: { metadata: { name, labels: { app: 'pm' }, annotations: { note: name } }, data: { k: 'v' } },
    });
    if (a.status !== 201) throw new Error(`create ${name}: ${a.status} ${a.text}`);
  }
  return String(before.json?.metadata?.resourceVersion);
}

/** What a client reads of one converted object. */
function shape(o: Record<string, unknown> | undefined): unknown {
  if (o === undefined) return null;
  const m = (o['metadata'] ?? {}) as Record<string, unknown>;
  return {
    kind: o['kind'],
    apiVersion: o['apiVersion'],
    keys: Object.keys(o).sort(),
    // managedFields left out: the embedded server records them only for a write naming a field
    // manager (engine/engine.ts), whatever the representation; what is compared here is the conversion.
    metadataKeys: Object.keys(m)
      .filter((k) => k !== 'managedFields')
      .sort(),
    name: m['name'],
    labels: m['labels'],
    annotations: m['annotations'],
  };
}

export const METADATA_CASES: ConformanceCase[] = [
  {
    id: 'metadata-list',
    title: 'a LIST with as=PartialObjectMetadataList answers a PartialObjectMetadataList of PartialObjectMetadata items, paged',
    run: async (t, ns) => {
      await twoConfigMaps(t, ns);
      const a = await t.request('GET', `/api/v1/namespaces/${ns}/configmaps?labelSelector=app%3Dpm&limit=1`, { accept: LIST });
      const b = await t.request(
        'GET',
        `/api/v1/namespaces/${ns}/configmaps?labelSelector=app%3Dpm&limit=1&continue=${encodeURIComponent(String(a.json?.metadata?.continue))}`,
        { accept: LIST },
      );
      return [a, b].map((x) => ({
        status: x.status,
        kind: x.json?.kind,
        apiVersion: x.json?.apiVersion,
        listMetadataKeys: Object.keys(x.json?.metadata ?? {}).sort(),
        items: (x.json?.items ?? []).map(shape),
      }));
    },
  },
  {
    id: 'metadata-get',
    title: 'a GET with as=PartialObjectMetadata answers the object as PartialObjectMetadata',
    run: async (t, ns) => {
      await twoConfigMaps(t, ns);
      const a = await t.request('GET', `/api/v1/namespaces/${ns}/configmaps/pm-a`, { accept: OBJECT });
      return { status: a.status, object: shape(a.json) };
    },
  },
  {
    id: 'metadata-watch',
    title: 'a WATCH with as=PartialObjectMetadata carries PartialObjectMetadata in ADDED, MODIFIED and DELETED frames',
    run: async (t, ns) => {
      const from = await twoConfigMaps(t, ns);
      await t.request('PATCH', `/api/v1/namespaces/${ns}/configmaps/pm-a`, {
        body: { metadata: { labels: { app: 'pm', phase: 'two' } } },
        contentType: 'application/merge-patch+json',
      });
      await t.request('DELETE', `/api/v1/namespaces/${ns}/configmaps/pm-b`);
      const frames = await t.frames(
        `/api/v1/namespaces/${ns}/configmaps?watch=true&labelSelector=app%3Dpm&resourceVersion=${from}&timeoutSeconds=1`,
        3_000,
        OBJECT,
      );
      return frames.filter((f) => f.type !== 'BOOKMARK').map((f) => ({ type: f.type, object: shape(f.object) }));
    },
  },
  {
    id: 'metadata-watch-list',
    title:
      'a watch-list with as=PartialObjectMetadata streams PartialObjectMetadata and ends with a PartialObjectMetadata bookmark',
    run: async (t, ns) => {
      await twoConfigMaps(t, ns);
      const frames = await t.frames(
        `/api/v1/namespaces/${ns}/configmaps?watch=true&labelSelector=app%3Dpm&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1`,
        3_000,
        OBJECT,
      );
      const end = frames.findIndex(
        (f) =>
          f.type === 'BOOKMARK' &&
          (f.object['metadata'] as { annotations?: Record<string, string> } | undefined)?.annotations?.[
            'k8s.io/initial-events-end'
          ] === 'true',
      );
      const head = end < 0 ? frames : frames.slice(0, end + 1);
      return head.map((f) =>
        f.type === 'BOOKMARK'
          ? { type: f.type, kind: f.object['kind'], apiVersion: f.object['apiVersion'], keys: Object.keys(f.object).sort() }
          : { type: f.type, object: shape(f.object) },
      );
    },
  },
];
