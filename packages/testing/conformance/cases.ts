/**
 * The raw-API conformance cases: each runs the same requests against a target and returns an
 * observation (the parts of the answers a client acts on); a case is SAME when the embedded and
 * the real server observe equal. A known difference carries its reason and stays in the report.
 */
import type { ConformanceCase } from './case.js';
import type { Target } from './target.js';
import { METADATA_CASES } from './metadata-cases.js';
import { SHARD_OFF_CASES } from './shard-cases.js';
import { WATCH_LIST_CASES } from './watch-list-cases.js';

/** A pod body with one container. */
function pod(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.9' }] },
    ...extra,
  };
}

/** Status essentials. */
function st(a: {
  status: number;
  json: { reason?: string; message?: string; details?: unknown } | undefined;
}): Record<string, unknown> {
  return { status: a.status, reason: a.json?.reason, message: a.json?.message, details: a.json?.details };
}

/** Digits runs (revisions, counts) replaced, for messages that quote a revision. */
function norev(s: unknown): unknown {
  return typeof s === 'string' ? s.replace(/\d{2,}/g, 'N') : s;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The frames' types with deletion metadata, the way the deletion cases compare them. */
function deletionFrames(frames: Array<{ type: string; object: Record<string, unknown> }>): unknown[] {
  return frames.map((f) => {
    const m = (f.object['metadata'] ?? {}) as Record<string, unknown>;
    return [f.type, m['deletionTimestamp'] !== undefined, m['deletionGracePeriodSeconds'] ?? null, m['generation'] ?? null];
  });
}

export const CASES: ConformanceCase[] = [
  {
    id: 'version-fields',
    title: '/version carries the 1.35 fields',
    run: async (t) => Object.keys((await t.request('GET', '/version')).json as object),
  },
  {
    id: 'unknown-group-404',
    title: 'an unknown API group is a text/plain 404',
    run: async (t) => {
      const a = await t.request('GET', '/apis/nope.example.io/v1/things');
      return { status: a.status, contentType: a.contentType, text: a.text };
    },
  },
  {
    id: 'unknown-resource-404',
    title: 'an unknown resource under /api/v1 is a NotFound Status',
    run: async (t) => st(await t.request('GET', '/api/v1/nothings')),
  },
  {
    id: 'namespaces-at-start',
    title: 'default, kube-system, kube-public, kube-node-lease exist, Active, labelled',
    run: async (t) => {
      const out: unknown[] = [];
      for (const n of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
        const a = await t.request('GET', `/api/v1/namespaces/${n}`);
        out.push([
          a.status,
          a.json?.status?.phase,
          a.json?.metadata?.labels?.['kubernetes.io/metadata.name'],
          a.json?.spec?.finalizers,
          a.json?.metadata?.generation ?? null,
        ]);
      }
      return out;
    },
  },
  {
    id: 'create-in-missing-namespace',
    title: 'a create into a missing namespace is 404 namespaces "x" not found',
    run: async (t, ns) =>
      st(await t.request('POST', `/api/v1/namespaces/${ns}-missing/configmaps`, { body: { metadata: { name: 'x' } } })),
  },
  {
    id: 'namespace-invalid-name',
    title: 'a namespace name that is not a DNS-1123 label is 422',
    run: async (t) => {
      const a = await t.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'Bad_Name' } } });
      return {
        status: a.status,
        reason: a.json?.reason,
        fields: (a.json?.details?.causes ?? []).map((c: { field: string }) => c.field),
      };
    },
  },
  {
    id: 'create-with-resourceversion',
    title: 'a create carrying a resourceVersion is the etcd3 500',
    run: async (t, ns) =>
      st(
        await t.request('POST', `/api/v1/namespaces/${ns}/configmaps`, {
          body: { metadata: { name: 'rv', resourceVersion: '5' } },
        }),
      ),
  },
  {
    id: 'watch-malformed-rv',
    title: 'a WATCH with a malformed resourceVersion is a 500 without reason',
    run: async (t, ns) => st(await t.request('GET', `/api/v1/namespaces/${ns}/configmaps?watch=true&resourceVersion=abc`)),
  },
  {
    id: 'list-malformed-rv',
    title: 'a LIST with a malformed resourceVersion is 400 invalid resource version',
    run: async (t, ns) => st(await t.request('GET', `/api/v1/namespaces/${ns}/configmaps?resourceVersion=abc`)),
  },
  {
    id: 'list-future-rv',
    title: 'a LIST from a future resourceVersion is 504 ResourceVersionTooLarge (retry hint only with the watch cache)',
    run: async (t, ns) => {
      const a = await t.request('GET', `/api/v1/namespaces/${ns}/configmaps?resourceVersion=99999999`);
      return { status: a.status, reason: a.json?.reason, message: norev(a.json?.message), details: a.json?.details };
    },
  },
  {
    id: 'watch-future-rv',
    title: 'a WATCH from a future resourceVersion is held silently until timeoutSeconds',
    run: async (t, ns) => {
      const a = await t.request(
        'GET',
        `/api/v1/namespaces/${ns}/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=2&resourceVersion=99999999`,
      );
      return { status: a.status, body: a.text.trim() };
    },
  },
  {
    id: 'list-rv0-limit',
    title: 'resourceVersion=0 with limit: the watch cache ignores limit, etcd pages',
    run: async (t, ns) => {
      let rv = '';
      for (const n of ['a', 'b', 'c']) {
        const c = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: { metadata: { name: n } } });
        rv = c.json?.metadata?.resourceVersion ?? rv;
      }
      // resourceVersion=0 reads whatever the watch cache holds, which may not yet hold the last
      // create (a 1.35 cache answered 2 of 3 once). A NotOlderThan read of the last write waits
      // for the cache to reach it, so the count below is about `limit`, not about cache lag.
      await t.request('GET', `/api/v1/namespaces/${ns}/configmaps?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan`);
      const a = await t.request('GET', `/api/v1/namespaces/${ns}/configmaps?resourceVersion=0&limit=1`);
      return {
        items: a.json?.items?.length,
        continued: a.json?.metadata?.continue !== undefined,
        remaining: a.json?.metadata?.remainingItemCount ?? null,
      };
    },
  },
  {
    id: 'delete-answer',
    title: 'a finished DELETE answers a Success Status (ConfigMap, custom resource) or the object (Service)',
    run: async (t, ns) => {
      await t.request('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: { metadata: { name: 'c' } } });
      await t.request('POST', `/api/v1/namespaces/${ns}/services`, {
        body: { metadata: { name: 's' }, spec: { ports: [{ port: 80 }] } },
      });
      const c = await t.request('DELETE', `/api/v1/namespaces/${ns}/configmaps/c`);
      const s = await t.request('DELETE', `/api/v1/namespaces/${ns}/services/s`);
      return [c.status, c.json?.kind, c.json?.status, c.json?.details?.kind, s.status, s.json?.kind];
    },
  },
  {
    id: 'update-stale-409',
    title: 'an update with a stale resourceVersion is 409 Conflict worded by the registry',
    run: async (t, ns) => {
      const c = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps`, {
        body: { metadata: { name: 'c' }, data: { a: '1' } },
      });
      await t.request('PUT', `/api/v1/namespaces/${ns}/configmaps/c`, { body: { ...c.json, data: { a: '2' } } });
      return st(await t.request('PUT', `/api/v1/namespaces/${ns}/configmaps/c`, { body: { ...c.json, data: { a: '3' } } }));
    },
  },
  {
    id: 'configmap-shape',
    title: 'a ConfigMap has no generation; a Secret folds stringData; a Service gets its defaults',
    run: async (t, ns) => {
      const c = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: { metadata: { name: 'shape' } } });
      const s = await t.request('POST', `/api/v1/namespaces/${ns}/secrets`, {
        body: { metadata: { name: 's' }, stringData: { a: 'b' } },
      });
      const v = await t.request('POST', `/api/v1/namespaces/${ns}/services`, {
        body: { metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }], selector: { app: 'x' } } },
      });
      const spec = { ...(v.json?.spec ?? {}) };
      delete spec.clusterIP;
      delete spec.clusterIPs;
      return {
        generation: c.json?.metadata?.generation ?? null,
        secret: [s.json?.data, s.json?.type, s.json?.stringData ?? null],
        service: [v.status, spec, v.json?.status],
      };
    },
  },
  {
    id: 'anonymous-403',
    title: 'no token is system:anonymous: 403 on resources, 200 on /version',
    run: async (t, ns) => {
      const a = await t.request('GET', `/api/v1/namespaces/${ns}/pods`, { token: false });
      const v = await t.request('GET', '/version', { token: false });
      return [st(a), v.status];
    },
  },
  {
    id: 'bad-token-401',
    title: 'a wrong token is 401 Unauthorized',
    run: async (t) => st(await t.request('GET', '/api/v1/namespaces/default/pods', { token: 'wrong-token' })),
  },
  {
    id: 'delete-unbound-pod',
    title: 'deleting an unbound pod: MODIFIED (deletionTimestamp, grace 0) then DELETED; the answer is the terminating pod',
    run: async (t, ns) => {
      const p = await t.request('POST', `/api/v1/namespaces/${ns}/pods`, { body: pod('p') });
      const watching = t.frames(
        `/api/v1/namespaces/${ns}/pods?watch=true&resourceVersion=${String(p.json?.metadata?.resourceVersion)}&timeoutSeconds=2`,
        6_000,
      );
      await sleep(300);
      const d = await t.request('DELETE', `/api/v1/namespaces/${ns}/pods/p`);
      return { answer: [d.status, d.json?.metadata?.deletionGracePeriodSeconds ?? null], frames: deletionFrames(await watching) };
    },
  },
  {
    id: 'delete-bound-pod-shortening',
    title: 'deleting a bound pod: each shortening its own MODIFIED, a longer grace nothing, grace 0 MODIFIED then DELETED',
    run: async (t, ns) => {
      await t.request('POST', `/api/v1/namespaces/${ns}/pods`, { body: pod('p') });
      await t.bind(ns, 'p', 'conformance-node');
      const cur = await t.request('GET', `/api/v1/namespaces/${ns}/pods/p`);
      const watching = t.frames(
        `/api/v1/namespaces/${ns}/pods?watch=true&resourceVersion=${String(cur.json?.metadata?.resourceVersion)}&timeoutSeconds=2`,
        6_000,
      );
      await sleep(300);
      const answers: unknown[] = [];
      for (const g of ['', '?gracePeriodSeconds=10', '?gracePeriodSeconds=20', '?gracePeriodSeconds=0']) {
        const d = await t.request('DELETE', `/api/v1/namespaces/${ns}/pods/p${g}`);
        answers.push([d.status, d.json?.metadata?.deletionGracePeriodSeconds ?? null]);
      }
      return { generationAfterBind: cur.json?.metadata?.generation, answers, frames: deletionFrames(await watching) };
    },
  },
  {
    id: 'pod-admission-defaults',
    title: 'a created pod carries priority, preemptionPolicy, the default tolerations and generation 1',
    run: async (t, ns) => {
      const a = await t.request('POST', `/api/v1/namespaces/${ns}/pods`, { body: pod('p') });
      const s = a.json?.spec ?? {};
      return [
        a.status,
        a.json?.metadata?.generation,
        s.priority,
        s.preemptionPolicy,
        s.tolerations,
        s.restartPolicy,
        s.terminationGracePeriodSeconds,
        s.dnsPolicy,
        s.schedulerName,
        a.json?.status,
      ];
    },
  },
  {
    id: 'pod-binding-eviction',
    title: 'pods/binding answers 201 Success, 409 once bound; pods/eviction deletes the pod (201)',
    run: async (t, ns) => {
      await t.request('POST', `/api/v1/namespaces/${ns}/pods`, { body: pod('p') });
      const binding = {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: 'p' },
        target: { apiVersion: 'v1', kind: 'Node', name: 'n1' },
      };
      const a = await t.request('POST', `/api/v1/namespaces/${ns}/pods/p/binding`, { body: binding });
      const b = await t.request('POST', `/api/v1/namespaces/${ns}/pods/p/binding`, { body: binding });
      const e = await t.request('POST', `/api/v1/namespaces/${ns}/pods/p/eviction`, {
        body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'p' }, deleteOptions: { gracePeriodSeconds: 0 } },
      });
      const g = await t.request('GET', `/api/v1/namespaces/${ns}/pods/p`);
      return { bind: [a.status, a.json], again: st(b), evict: [e.status, e.json?.status], after: g.status };
    },
  },
  {
    id: 'precondition-409s',
    title: 'precondition 409s: DELETE names the Kind (uid, resourceVersion); a PUT with a wrong uid is the storage error',
    run: async (t, ns) => {
      await t.request('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: { metadata: { name: 'c' } } });
      const strip = (a: {
        status: number;
        json: { reason?: string; message?: string; details?: unknown } | undefined;
      }): unknown => ({
        ...st(a),
        message: String(a.json?.message ?? '')
          .replace(/\(([-0-9a-f]{36}|\d+)\)/g, '(X)')
          .replace(/object meta: [-0-9a-f]{36}/, 'object meta: X'),
      });
      const a = await t.request('DELETE', `/api/v1/namespaces/${ns}/configmaps/c`, { body: { preconditions: { uid: 'nope' } } });
      const b = await t.request('DELETE', `/api/v1/namespaces/${ns}/configmaps/c`, {
        body: { preconditions: { resourceVersion: '1' } },
      });
      const c = await t.request('PUT', `/api/v1/namespaces/${ns}/configmaps/c`, {
        body: { metadata: { name: 'c', uid: 'nope' } },
      });
      return [strip(a), strip(b), strip(c)];
    },
  },
  {
    id: 'pod-status-put',
    title: 'a pods/status PUT keeps label and annotation changes and ignores spec',
    run: async (t, ns) => {
      const p = await t.request('POST', `/api/v1/namespaces/${ns}/pods`, {
        body: pod('p', { metadata: { name: 'p', labels: { a: '1' } } }),
      });
      const body = {
        ...p.json,
        metadata: { ...p.json.metadata, labels: { a: '2', b: 'x' }, annotations: { n: '1' } },
        spec: { ...p.json.spec, activeDeadlineSeconds: 5 },
        status: { ...p.json.status, phase: 'Running' },
      };
      const a = await t.request('PUT', `/api/v1/namespaces/${ns}/pods/p/status`, { body });
      return [
        a.status,
        a.json?.metadata?.labels,
        a.json?.metadata?.annotations,
        a.json?.spec?.activeDeadlineSeconds ?? null,
        a.json?.status?.phase,
      ];
    },
  },
  {
    id: 'pod-bookmark-shape',
    title: 'a pod BOOKMARK carries the empty spec/status stubs (watch cache); etcd sends none',
    nondeterministic:
      'whether the watch cache sends a bookmark within 6 s depends on its 1-second bookmark buckets (0 to 2 seen against kube-apiserver 1.35.4); the stub shape was checked by hand',
    run: async (t, ns) => {
      const p = await t.request('POST', `/api/v1/namespaces/${ns}/pods`, { body: pod('p') });
      const frames = await t.frames(
        `/api/v1/namespaces/${ns}/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=6&resourceVersion=${String(p.json?.metadata?.resourceVersion)}`,
        10_000,
      );
      const first = frames.find((f) => f.type === 'BOOKMARK');
      return first === undefined
        ? null
        : Object.keys(first.object).concat(JSON.stringify(first.object['spec']), JSON.stringify(first.object['status']));
    },
  },
  {
    id: 'smp-containers',
    title: 'strategic merge patch merges pod containers by name',
    run: async (t, ns) => {
      const body = pod('p');
      (body['spec'] as { containers: unknown[] }).containers = [
        { name: 'a', image: 'registry.k8s.io/pause:3.9' },
        { name: 'b', image: 'registry.k8s.io/pause:3.9' },
      ];
      await t.request('POST', `/api/v1/namespaces/${ns}/pods`, { body });
      const a = await t.request('PATCH', `/api/v1/namespaces/${ns}/pods/p`, {
        body: { spec: { containers: [{ name: 'b', image: 'registry.k8s.io/pause:3.10' }] } },
        contentType: 'application/strategic-merge-patch+json',
      });
      return [a.status, (a.json?.spec?.containers ?? []).map((c: { name: string; image: string }) => `${c.name}=${c.image}`)];
    },
  },
  {
    id: 'apply-field-manager-required',
    title: 'server-side apply without fieldManager is 422 on PatchOptions',
    run: async (t, ns) =>
      st(
        await t.request('PATCH', `/api/v1/namespaces/${ns}/configmaps/x`, {
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } },
          contentType: 'application/apply-patch+yaml',
        }),
      ),
  },
  {
    id: 'apply-conflict',
    title: 'server-side apply: create 201, a second manager changing an owned field 409 with causes, force takes it',
    run: async (t, ns) => {
      const path = `/api/v1/namespaces/${ns}/configmaps/ssa`;
      const ct = 'application/apply-patch+yaml';
      const a = await t.request('PATCH', `${path}?fieldManager=alice`, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa' }, data: { x: '1', y: '2' } },
        contentType: ct,
      });
      const b = await t.request('PATCH', `${path}?fieldManager=bob`, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa' }, data: { x: '9' } },
        contentType: ct,
      });
      const c = await t.request('PATCH', `${path}?fieldManager=bob&force=true`, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa' }, data: { x: '9' } },
        contentType: ct,
      });
      const fields = (a.json?.metadata?.managedFields ?? []).map(
        (m: { manager: string; operation: string; fieldsV1: unknown }) => [m.manager, m.operation, m.fieldsV1],
      );
      return { create: [a.status, fields], conflict: st(b), forced: [c.status, c.json?.data] };
    },
  },
  {
    id: 'dry-run',
    title: 'dryRun=All writes nothing (no resourceVersion on a dry-run create); other values are 422',
    run: async (t, ns) => {
      const a = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps?dryRun=All`, {
        body: { metadata: { name: 'dry' } },
      });
      const g = await t.request('GET', `/api/v1/namespaces/${ns}/configmaps/dry`);
      const b = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps?dryRun=x`, { body: { metadata: { name: 'dry' } } });
      return {
        create: [a.status, a.json?.metadata?.resourceVersion ?? null, a.json?.metadata?.uid !== undefined],
        after: g.status,
        bad: st(b),
      };
    },
  },
  {
    id: 'field-validation',
    title:
      'fieldValidation: Strict refuses an unknown top-level field (400, nothing written), Warn and unset warn, Ignore is silent, other values 422',
    run: async (t, ns) => {
      const cm = (name: string): Record<string, unknown> => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name },
        data: { a: 'b' },
        foo: 1,
      });
      const strict = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps?fieldValidation=Strict`, {
        body: cm('fv-strict'),
      });
      const after = await t.request('GET', `/api/v1/namespaces/${ns}/configmaps/fv-strict`);
      const warn = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps?fieldValidation=Warn`, { body: cm('fv-warn') });
      const unset = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: cm('fv-unset') });
      const ignore = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps?fieldValidation=Ignore`, {
        body: cm('fv-ignore'),
      });
      const bad = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps?fieldValidation=strict`, { body: cm('fv-bad') });
      return {
        strict: st(strict),
        after: after.status,
        warn: [warn.status, warn.warning],
        unset: [unset.status, unset.warning],
        ignore: [ignore.status, ignore.warning],
        bad: st(bad),
      };
    },
  },
  {
    id: 'openapi-v3-kubectl',
    title:
      '/openapi/v3 lists api/v1 with a hashed URL; its ConfigMap PATCH carries the GVK and the fieldValidation parameter kubectl looks for',
    run: async (t) => {
      const root = await t.request('GET', '/openapi/v3');
      const url = String(root.json?.paths?.['api/v1']?.serverRelativeURL ?? '');
      const doc = await t.request('GET', url);
      const patch = doc.json?.paths?.['/api/v1/namespaces/{namespace}/configmaps/{name}']?.patch;
      const params = (patch?.parameters ?? []) as Array<{ name?: string; in?: string; $ref?: string }>;
      const schemas = (doc.json?.components?.schemas ?? {}) as Record<string, { 'x-kubernetes-group-version-kind'?: unknown }>;
      return {
        root: root.status,
        url: /^\/openapi\/v3\/api\/v1\?hash=[0-9A-F]+$/.test(url),
        doc: [doc.status, doc.json?.openapi?.startsWith('3.') === true],
        gvk: patch?.['x-kubernetes-group-version-kind'],
        fieldValidation: params.some((p) => p.name === 'fieldValidation' && p.in === 'query'),
        podSchemaGvk: schemas['io.k8s.api.core.v1.Pod']?.['x-kubernetes-group-version-kind'],
      };
    },
  },
  {
    id: 'json-patch-proto',
    title: 'a JSON patch on /__proto__/… is refused (the document has no such member)',
    run: async (t, ns) => {
      await t.request('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: { metadata: { name: 'proto' } } });
      const a = await t.request('PATCH', `/api/v1/namespaces/${ns}/configmaps/proto`, {
        body: [{ op: 'add', path: '/__proto__/polluted', value: 'x' }],
        contentType: 'application/json-patch+json',
      });
      return { status: a.status, reason: a.json?.reason };
    },
  },
  {
    id: 'crd-established',
    title: 'a CRD becomes Established and its kind is served; an invalid CRD is 422',
    run: async (t, ns) => {
      const group = `${ns}.example.com`;
      const crd = {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `gadgets.${group}` },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: 'gadgets', kind: 'Gadget' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          ],
        },
      };
      const c = await t.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: crd });
      let established = false;
      for (let i = 0; i < 100 && !established; i++) {
        const g = await t.request('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.${group}`);
        established = (g.json?.status?.conditions ?? []).some(
          (x: { type: string; status: string }) => x.type === 'Established' && x.status === 'True',
        );
        if (!established) await sleep(100);
      }
      let served = 0;
      for (let i = 0; i < 50 && served !== 201; i++) {
        served = (
          await t.request('POST', `/apis/${group}/v1/namespaces/${ns}/gadgets`, {
            body: { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: 'g' } },
          })
        ).status;
        if (served !== 201) await sleep(100);
      }
      const bad = await t.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
        body: { ...crd, metadata: { name: `wrong.${group}` } },
      });
      await t.request('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.${group}`);
      return { created: c.status, finalizers: c.json?.metadata?.finalizers, established, served, bad: bad.status };
    },
  },
  {
    id: 'bookmark-before-timeout',
    title: 'bookmarks: the watch cache sends one 2 s before the deadline; etcd sends none',
    personalities: ['cached', 'uncached'],
    nondeterministic:
      'the watch cache schedules bookmarks on 1-second buckets shared by all watchers: a 4-second watch got 0, 1 or 2 against kube-apiserver 1.35.4, where the embedded server sends exactly one, 2 s before the deadline',
    run: async (t, ns) => {
      const c = await t.request('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: { metadata: { name: 'bm' } } });
      const frames = await t.frames(
        `/api/v1/namespaces/${ns}/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion=${String(c.json?.metadata?.resourceVersion)}`,
        8_000,
      );
      return frames.map((f) => f.type);
    },
  },
  ...WATCH_LIST_CASES,
  ...METADATA_CASES,
  ...SHARD_OFF_CASES,
];
