/**
 * Making sure the CellSet kind is served before the controller lists it: the CRD is installed when
 * it is missing and this identity may install it; otherwise a clear, typed error says what to do
 * (a controller bound to the least-privilege Role may not create CRDs — cluster-scoped — by design).
 */
import type { KubeClient } from '@reconcile-loop/kube-client';
import { isForbidden, isNotFound } from '@reconcile-loop/kube-client/errors';
import { GROUP, KIND, PLURAL, VERSION } from '../src/api.js';

/** The CellSet CRD is not installed and could not be installed. */
export class CrdUnavailableError extends Error {
  readonly code = 'CELLSET_CRD_UNAVAILABLE' as const;
  override readonly name = 'CrdUnavailableError';
}

const crdResource = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
};

function established(crd: Record<string, unknown>): boolean {
  const conditions = (crd['status'] as { conditions?: Array<{ type?: string; status?: string }> } | undefined)?.conditions ?? [];
  return conditions.some((c) => c.type === 'Established' && c.status === 'True');
}

/**
 * Resolves `'served'` when CellSets can be listed in `namespace`, `'installed'` after installing the
 * CRD and seeing it Established (within `timeoutMs`). Throws {@link CrdUnavailableError} when it is
 * missing and may not be installed, or does not become Established in time.
 */
export async function ensureCellSetCrd(
  client: KubeClient,
  namespace: string,
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<'served' | 'installed'> {
  const cells = client.resource({ group: GROUP, version: VERSION, plural: PLURAL }).inNamespace(namespace);
  try {
    await cells.list({ limit: 1, signal: options.signal });
    return 'served';
  } catch (error) {
    if (!isNotFound(error)) throw error; // 403 on list: the Role is wrong, and the reflector will say so with the Status
  }
  const crds = client.resource(crdResource);
  const name = `${PLURAL}.${GROUP}`;
  try {
    await crds.create(cellSetCrd(), { signal: options.signal });
  } catch (error) {
    if (isForbidden(error)) {
      throw new CrdUnavailableError(
        `the CellSet CRD (${name}) is not installed, and this identity may not install it (403: ${(error as Error).message}); ` +
          'install it as a cluster admin: kubectl apply -f examples/cellset/deploy/crd.yaml',
        { cause: error },
      );
    }
    if ((error as { statusCode?: number }).statusCode !== 409) throw error; // 409: installed meanwhile
  }
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    const crd = (await crds.get(name, { signal: options.signal })) as Record<string, unknown>;
    if (established(crd)) break;
    if (Date.now() > deadline)
      throw new CrdUnavailableError(
        `the CellSet CRD (${name}) was created but not Established within ${options.timeoutMs ?? 30_000} ms`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // Established is set before every apiserver serves the new path; wait until a list answers.
  for (;;) {
    try {
      await cells.list({ limit: 1, signal: options.signal });
      return 'installed';
    } catch (error) {
      if (!isNotFound(error) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/**
 * The CustomResourceDefinition, as `kubectl apply -f deploy/crd.yaml` installs it (the controller
 * installs this object itself when its identity may). `status` is a subresource, so status writes
 * never bump `metadata.generation` and spec writes never touch status.
 */
export function cellSetCrd() {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${PLURAL}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { kind: KIND, listKind: `${KIND}List`, plural: PLURAL, singular: 'cellset' },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  required: ['replicas', 'template'],
                  properties: {
                    replicas: { type: 'integer', minimum: 0 },
                    template: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                  },
                },
                status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              },
            },
          },
        },
      ],
    },
  };
}
