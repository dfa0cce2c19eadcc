/**
 * Cluster fixtures the failure scenarios share (reflector-level and loop-level alike): a namespace
 * whose pods a service account may not list (a real RBAC Role), and a CRD whose openAPI schema
 * admits an object a stricter client view rejects (a poison object). Plus the bounded polling they
 * need. Imports only `@kubernetes/client-node`; nothing here imports vitest.
 */
import { randomBytes } from 'node:crypto';
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';

/**
 * Polls `probe` every 50 ms until it returns something other than `undefined`/`false`; past
 * `timeoutMs` it throws with `describeState()` so a failure says where things stood.
 */
export async function eventually<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  describeState: () => unknown,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`${what}: not reached in ${timeoutMs} ms; state: ${JSON.stringify(describeState(), null, 1)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `prefix-` plus 6 random hex digits: scenarios never collide on a shared cluster. */
export function uniqueNamespace(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

/** A KubeConfig for the same cluster as `admin`, authenticating with `token` instead. */
export function withToken(admin: KubeConfig, token: string): KubeConfig {
  const cluster = admin.getCurrentCluster();
  if (cluster === null) throw new Error('admin kubeconfig without a cluster');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'watcher', token }],
    contexts: [{ name: 'watcher', cluster: cluster.name, user: 'watcher' }],
    currentContext: 'watcher',
  });
  return kc;
}

/** A namespace where the service account `watcher` may get and watch pods but not list them. */
export interface ForbiddenListNamespace {
  readonly namespace: string;
  /** A KubeConfig authenticating as `system:serviceaccount:<namespace>:watcher`. */
  readonly kubeConfig: KubeConfig;
  /** Replaces the Role with one that also allows `list`: the RBAC fix. */
  grantList(): Promise<void>;
}

/**
 * Creates a fresh namespace, the service account `watcher`, a Role `pods-reader` allowing `get` and
 * `watch` on pods (no `list`: every LIST is 403 Forbidden), its RoleBinding, and a one-hour token.
 */
export async function forbiddenListNamespace(admin: KubeConfig, prefix = 'rbac'): Promise<ForbiddenListNamespace> {
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  const namespace = uniqueNamespace(prefix);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'watcher' } } });
  const role = (verbs: string[]) => ({
    metadata: { name: 'pods-reader', namespace },
    rules: [{ apiGroups: [''], resources: ['pods'], verbs }],
  });
  await rbac.createNamespacedRole({ namespace, body: role(['get', 'watch']) });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'pods-reader', namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pods-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'watcher', namespace }],
    },
  });
  const tokenRequest = await core.createNamespacedServiceAccountToken({
    name: 'watcher',
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = tokenRequest.status?.token;
  if (!token) throw new Error('TokenRequest returned no token');
  return {
    namespace,
    kubeConfig: withToken(admin, token),
    grantList: async () =>
      void (await rbac.replaceNamespacedRole({ name: 'pods-reader', namespace, body: role(['get', 'list', 'watch']) })),
  };
}

/** An object as the custom-objects API returns it (the parts the scenarios read). */
export interface CustomObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  spec?: { replicas?: unknown };
}

/** A served CRD (namespaced, one version) whose `spec.replicas` is int-or-string, and helpers in one namespace. */
export interface PoisonCrd {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
  readonly namespace: string;
  /** Creates `name` with `spec.replicas` (a string is a poison object for an int-only view). */
  create(name: string, replicas: number | string, labels?: Record<string, string>): Promise<CustomObject>;
  /** Read-modify-write of `spec.replicas`. */
  setReplicas(name: string, replicas: number | string): Promise<void>;
  remove(name: string): Promise<void>;
  list(): Promise<CustomObject[]>;
  /** Deletes the CRD (and with it every object); never throws. */
  dispose(): Promise<void>;
}

/**
 * Installs a CRD whose openAPI schema admits `spec.replicas: "two"` (`x-kubernetes-int-or-string`),
 * waits until it is served, and creates a fresh namespace for its objects.
 */
export async function poisonCrd(admin: KubeConfig, prefix = 'crd'): Promise<PoisonCrd> {
  const core = admin.makeApiClient(CoreV1Api);
  const extensions = admin.makeApiClient(ApiextensionsV1Api);
  const custom = admin.makeApiClient(CustomObjectsApi);
  const group = 'e2e.reconcile-loop.io';
  const version = 'v1alpha1';
  const suffix = randomBytes(2).toString('hex');
  const plural = `cells${suffix}`;
  const kind = `Cell${suffix}`;
  const namespace = uniqueNamespace(prefix);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await extensions.createCustomResourceDefinition({
    body: {
      metadata: { name: `${plural}.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural, singular: `cell${suffix}`, kind, listKind: `${kind}List` },
        versions: [
          {
            name: version,
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: { spec: { type: 'object', properties: { replicas: { x_kubernetes_int_or_string: true } } } },
              },
            },
          },
        ],
      },
    },
  });
  const dispose = async (): Promise<void> =>
    void (await extensions.deleteCustomResourceDefinition({ name: `${plural}.${group}` }).catch(() => {}));
  const scope = { group, version, namespace, plural };
  const list = async (): Promise<CustomObject[]> =>
    ((await custom.listNamespacedCustomObject(scope)) as { items: CustomObject[] }).items;
  try {
    // A new CRD is served a moment after it is created.
    await eventually(
      'the CRD served',
      () =>
        list().then(
          () => true,
          () => false,
        ),
      () => plural,
    );
  } catch (error) {
    await dispose();
    throw error;
  }
  return {
    group,
    version,
    plural,
    kind,
    namespace,
    create: async (name, replicas, labels) =>
      (await custom.createNamespacedCustomObject({
        ...scope,
        body: { apiVersion: `${group}/${version}`, kind, metadata: { name, labels }, spec: { replicas } },
      })) as CustomObject,
    setReplicas: async (name, replicas) => {
      const current = (await custom.getNamespacedCustomObject({ ...scope, name })) as { spec: { replicas: unknown } };
      current.spec.replicas = replicas;
      await custom.replaceNamespacedCustomObject({ ...scope, name, body: current });
    },
    remove: async (name) => void (await custom.deleteNamespacedCustomObject({ ...scope, name })),
    list,
    dispose,
  };
}

/** An object as a LIST returns it: only the identity and resourceVersion are read. */
export interface ListedObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/**
 * Waits until `cached()` (object key → resourceVersion) equals what `list()` returns, minus the keys
 * `quarantined()` names (read afresh on each try); throws with both sides past the deadline. Returns
 * both sides of the last comparison, for the caller to assert on.
 */
export async function storeMatchesFreshList(
  cached: () => Record<string, string>,
  list: () => Promise<ListedObject[]>,
  quarantined: () => Iterable<string> = () => [],
): Promise<{ listed: Record<string, string>; cached: Record<string, string> }> {
  let seen = { listed: {} as Record<string, string>, cached: {} as Record<string, string> };
  await eventually(
    'store == fresh LIST, quarantined keys aside',
    async () => {
      const skip = new Set(quarantined());
      const listed = Object.fromEntries(
        (await list())
          .map((o) => [`${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`, o.metadata?.resourceVersion ?? ''] as const)
          .filter(([key]) => !skip.has(key))
          .sort(),
      );
      // A quarantined key is cached at its last good version (or not at all), not the listed one.
      seen = {
        listed,
        cached: Object.fromEntries(
          Object.entries(cached())
            .filter(([key]) => !skip.has(key))
            .sort(),
        ),
      };
      return JSON.stringify(seen.listed) === JSON.stringify(seen.cached);
    },
    () => seen,
  );
  return seen;
}
