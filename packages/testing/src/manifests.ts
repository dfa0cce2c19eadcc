import type { ResourceEngine } from './engine/engine.js';
import { storageKey } from './engine/engine.js';
import { ApiServerUsageError } from './errors.js';
import type { ResourceCatalog } from './kinds/catalog.js';
import { CRD_RESOURCE } from './kinds/crd.js';
import type { ApiServerObject } from './types.js';

function isCrd(o: ApiServerObject): boolean {
  return o.apiVersion === CRD_RESOURCE.apiVersion && o.kind === CRD_RESOURCE.kind;
}

/** Resolves once every named CRD is Established (its kinds served), or rejects after `timeoutMs`. */
function untilEstablished(engine: ResourceEngine, names: string[], timeoutMs: number): Promise<void> {
  const established = (): boolean =>
    names.every((n) => {
      const c = engine.store.get(CRD_RESOURCE, storageKey('', n));
      const conds = (c?.['status'] as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions ?? [];
      return conds.some((x) => x.type === 'Established' && x.status === 'True');
    });
  return new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const poll = (): void => {
      if (established()) resolve();
      else if (Date.now() > deadline)
        reject(new ApiServerUsageError('RL_APISERVER_UNKNOWN_RESOURCE', `CRDs not established: ${names.join(', ')}`));
      else setTimeout(poll, 1);
    };
    poll();
  });
}

/**
 * Creates manifests as `kubectl create -f` would, each by its `apiVersion`/`kind`: CRDs first
 * (waiting until they are Established and served), then everything else in order, as direct
 * writes (a missing namespace is created). An unserved kind throws RL_APISERVER_UNKNOWN_RESOURCE; a refused
 * object throws its ApiServerStatusError.
 */
export async function loadManifests(
  engine: ResourceEngine,
  catalog: ResourceCatalog,
  manifests: readonly ApiServerObject[],
): Promise<ApiServerObject[]> {
  const out: ApiServerObject[] = [];
  const crds = manifests.filter(isCrd);
  for (const c of crds) out.push(structuredClone(engine.create(CRD_RESOURCE, '', c, { direct: true })));
  if (crds.length > 0)
    await untilEstablished(
      engine,
      crds.map((c) => c.metadata.name ?? ''),
      5_000,
    );
  for (const m of manifests) {
    if (isCrd(m)) continue;
    const r = catalog.byKind(String(m.apiVersion ?? ''), String(m.kind ?? ''));
    if (r === undefined)
      throw new ApiServerUsageError(
        'RL_APISERVER_UNKNOWN_RESOURCE',
        `no resource serves kind ${String(m.kind)} in ${String(m.apiVersion)}`,
      );
    const ns = r.namespaced ? (m.metadata?.namespace ?? 'default') : '';
    out.push(structuredClone(engine.create(r, ns, m, { direct: true })));
  }
  return out;
}
