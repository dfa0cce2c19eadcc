import type { ApiServer } from '@reconcile-loop/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { accessFromKubeconfig, type Target } from '../../packages/testing/conformance/target.js';
import { conforms, embeddedTarget, realTarget, report, runConformance } from '../../packages/testing/conformance/runner.js';
import { SHARD_CASES, SHARD_OFF_CASES, shardHash } from '../../packages/testing/conformance/shard-cases.js';
import { podManifest, readVersions, uniqueNamespace } from '../src/index.js';
import { e2eAvailability, requireControlPlane, useE2eEnvironment } from '../src/environment.js';

// Sharded LIST/WATCH (KEP-5866, feature gate `ShardedListAndWatch`, alpha and default off since
// 1.36; k8s.io/apiserver pkg/features/kube_features.go of v0.36.3 and v0.37.2 register it, v0.35.4
// does not). `ListOptions.shardSelector` keeps the objects whose 64-bit FNV-1a hash of the field
// (k8s.io/apimachinery pkg/sharding HashField) falls in [start, end), and the list echoes the
// selector in `metadata.shardInfo`. What a client can rely on, per line: with the gate on (1.36+)
// the server filters and echoes; with the gate off, and on 1.35 (which has no such gate and
// refuses `--feature-gates=ShardedListAndWatch=true` at start), the parameter is ignored: every
// object comes back and `shardInfo` is absent, so a client must filter itself.

const availability = e2eAvailability();
const env = useE2eEnvironment(availability);
const versions = readVersions();
const HALF = 0x8000000000000000n;
const lower = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
const upper = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')";

/** FNV-1a 64 of the field as the apiserver hashes it (apimachinery HashField), as a number to compare with HALF. */
function fnv1a64(value: string): bigint {
  return BigInt(`0x${shardHash(value)}`);
}

const started: ApiServer[] = [];
afterAll(async () => {
  await Promise.allSettled(started.map((s) => s.close()));
});

interface ListedPod {
  metadata: { name: string; uid: string };
}

async function seededPods(target: Target, prefix: string, count: number): Promise<{ ns: string; uids: Map<string, string> }> {
  const ns = uniqueNamespace(prefix);
  await target.namespace(ns);
  for (let i = 0; i < count; i++) {
    const a = await target.request('POST', `/api/v1/namespaces/${ns}/pods`, { body: podManifest(`p${i}`, { labels: {} }) });
    if (a.status !== 201) throw new Error(`create p${i}: ${a.status} ${a.text}`);
  }
  const all = await target.request('GET', `/api/v1/namespaces/${ns}/pods`);
  const uids = new Map((all.json.items as ListedPod[]).map((p) => [p.metadata.name, p.metadata.uid]));
  return { ns, uids };
}

function names(items: ListedPod[]): string[] {
  return items.map((p) => p.metadata.name).sort();
}

describe.skipIf(!availability.run)(`sharded LIST/WATCH against kube-apiserver ${versions.kubernetes}`, () => {
  it(`[e2e: ShardedListAndWatch gate] ${versions.minor >= 36 ? 'kube-apiserver started with --feature-gates=ShardedListAndWatch=true filters LIST and WATCH by the FNV-1a 64 hash of metadata.uid and echoes the selector in metadata.shardInfo' : 'kube-apiserver 1.35 has no ShardedListAndWatch gate and refuses to start with it'}`, async (context) => {
    const cp = requireControlPlane(context, env());
    if (versions.minor < 36) {
      await expect(cp.extraApiserver('kube-apiserver-sharded', ['--feature-gates=ShardedListAndWatch=true'])).rejects.toThrow(
        /unrecognized feature gate: ShardedListAndWatch/,
      );
      return;
    }
    const endpoint = await cp.extraApiserver('kube-apiserver-sharded', ['--feature-gates=ShardedListAndWatch=true']);
    const target = realTarget('kube-apiserver (sharded)', accessFromKubeconfig(endpoint.kubeconfig));
    const { ns, uids } = await seededPods(target, 'shard-on', 12);
    const expectedLower = [...uids]
      .filter(([, uid]) => fnv1a64(uid) < HALF)
      .map(([n]) => n)
      .sort();
    const expectedUpper = [...uids]
      .filter(([, uid]) => fnv1a64(uid) >= HALF)
      .map(([n]) => n)
      .sort();
    const halves: Array<[string, string[]]> = [
      [lower, expectedLower],
      [upper, expectedUpper],
    ];
    for (const [selector, expected] of halves) {
      const a = await target.request('GET', `/api/v1/namespaces/${ns}/pods?shardSelector=${encodeURIComponent(selector)}`);
      expect(a.status, a.text).toBe(200);
      expect(a.json.metadata.shardInfo).toEqual({ selector });
      expect(names(a.json.items)).toEqual(expected);
    }
    // The watch applies the same selector: of pods created after the cursor, only the lower half's arrive.
    const listed = await target.request('GET', `/api/v1/namespaces/${ns}/pods`);
    const rv = listed.json.metadata.resourceVersion as string;
    const watching = target.frames(
      `/api/v1/namespaces/${ns}/pods?watch=true&resourceVersion=${rv}&shardSelector=${encodeURIComponent(lower)}`,
      6_000,
    );
    const created = new Map<string, string>();
    for (let i = 12; i < 20; i++) {
      const a = await target.request('POST', `/api/v1/namespaces/${ns}/pods`, { body: podManifest(`p${i}`, { labels: {} }) });
      expect(a.status, a.text).toBe(201);
      created.set(a.json.metadata.name, a.json.metadata.uid);
    }
    const frames = await watching;
    const added = frames.filter((f) => f.type === 'ADDED').map((f) => (f.object as unknown as ListedPod).metadata.name);
    expect(added.sort()).toEqual(
      [...created]
        .filter(([, uid]) => fnv1a64(uid) < HALF)
        .map(([n]) => n)
        .sort(),
    );
  }, 180_000);

  it('[e2e: shardSelector without the gate] the default apiserver (gate off; on 1.35 no gate at all) ignores shardSelector: every pod comes back and metadata.shardInfo is absent', async () => {
    const e = env();
    const target = realTarget('kube-apiserver', accessFromKubeconfig(e.endpoint.kubeconfig));
    const { ns, uids } = await seededPods(target, 'shard-off', 6);
    const a = await target.request('GET', `/api/v1/namespaces/${ns}/pods?shardSelector=${encodeURIComponent(lower)}`);
    expect(a.status, a.text).toBe(200);
    expect(a.json.metadata.shardInfo).toBeUndefined();
    expect(names(a.json.items)).toEqual([...uids.keys()].sort());
  }, 120_000);
});

describe.skipIf(!availability.run)(
  `conformance of the embedded apiserver's sharded LIST/WATCH with kube-apiserver ${versions.kubernetes}`,
  () => {
    it(`[testing: shardSelector conformance] ${versions.minor >= 36 ? 'the shard cases give the same answers on the embedded apiserver (gate on, its default) and on kube-apiserver started with --feature-gates=ShardedListAndWatch=true' : 'on 1.35 only the gate-off cases run (no ShardedListAndWatch gate)'}; the gate-off cases the same on the default apiserver and the embedded one with shardedListAndWatch: false`, async (context) => {
      const e = env();
      const pairs: Array<{ cases: typeof SHARD_CASES; kubeconfig: string; sharded: boolean }> = [
        { cases: SHARD_OFF_CASES, kubeconfig: e.endpoint.kubeconfig, sharded: false },
      ];
      if (versions.minor >= 36) {
        const cp = requireControlPlane(context, e);
        const endpoint = await cp.extraApiserver('kube-apiserver-sharded-conformance', [
          '--feature-gates=ShardedListAndWatch=true',
        ]);
        pairs.push({ cases: SHARD_CASES, kubeconfig: endpoint.kubeconfig, sharded: true });
      }
      const results = [];
      for (const p of pairs) {
        const emb = await embeddedTarget('cached', { shardedListAndWatch: p.sharded });
        started.push(emb.server);
        const real = realTarget(`kube-apiserver${p.sharded ? ' (sharded)' : ''}`, accessFromKubeconfig(p.kubeconfig));
        results.push(...(await runConformance([{ personality: 'cached', embedded: emb.target, real }], p.cases)));
      }
      process.stdout.write(`\n[sharded conformance against kube-apiserver ${versions.kubernetes}]\n${report(results)}\n`);
      expect(results.length).toBe(SHARD_OFF_CASES.length + (versions.minor >= 36 ? SHARD_CASES.length : 0));
      expect(conforms(results), report(results)).toBe(true);
    }, 300_000);
  },
);

describe('FNV-1a 64 as the apiserver hashes a shard field', () => {
  it('[e2e: ShardedListAndWatch gate] the hash matches Go hash/fnv New64a on known vectors', () => {
    // Vectors of FNV-1a 64 (the reference test suite of the algorithm's authors).
    expect(fnv1a64('')).toBe(0xcbf29ce484222325n);
    expect(fnv1a64('a')).toBe(0xaf63dc4c8601ec8cn);
    expect(fnv1a64('foobar')).toBe(0x85944171f73967e8n);
  });
});
