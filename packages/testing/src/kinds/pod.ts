/**
 * The pods strategy: the subset of the apiserver's pod defaulting and validation this server
 * applies, spec immutability, graceful deletion from `terminationGracePeriodSeconds`, the pod
 * field selectors and kubectl's pod columns.
 */
import { isRecord, stable } from '../engine/meta.js';
import { forbidden, required, type FieldError } from '../status.js';
import type { ApiServerObject, ApiServerPod } from '../types.js';
import { POD_COLUMNS, podCells } from './pod-table.js';
import { META_MERGE_KEYS, genericStrategy, resourceType, str, type ResourceType } from './resource.js';

function qosClass(p: ApiServerPod): string {
  const containers = p.spec?.containers ?? [];
  let any = false;
  let guaranteed = containers.length > 0;
  for (const c of containers) {
    const res = isRecord(c['resources']) ? c['resources'] : {};
    const req = isRecord(res['requests']) ? res['requests'] : {};
    const lim = isRecord(res['limits']) ? res['limits'] : {};
    if (Object.keys(req).length > 0 || Object.keys(lim).length > 0) any = true;
    for (const k of ['cpu', 'memory']) {
      if (lim[k] === undefined || (req[k] !== undefined && req[k] !== lim[k])) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

/** The subset of the apiserver's pod defaulting this server applies (spec and containers). */
function defaultPodSpec(spec: Record<string, unknown>): Record<string, unknown> {
  const s: Record<string, unknown> = { ...spec };
  s['restartPolicy'] ??= 'Always';
  s['terminationGracePeriodSeconds'] ??= 30;
  s['dnsPolicy'] ??= 'ClusterFirst';
  s['schedulerName'] ??= 'default-scheduler';
  s['securityContext'] ??= {};
  s['enableServiceLinks'] ??= true;
  for (const list of ['containers', 'initContainers']) {
    const cs = s[list];
    if (!Array.isArray(cs)) continue;
    s[list] = cs.map((c: unknown) => {
      if (!isRecord(c)) return c;
      const d: Record<string, unknown> = { ...c };
      d['resources'] ??= {};
      d['terminationMessagePath'] ??= '/dev/termination-log';
      d['terminationMessagePolicy'] ??= 'File';
      if (d['imagePullPolicy'] === undefined && typeof d['image'] === 'string') {
        const img = d['image'];
        const tag = img.includes('@') ? 'digest' : (img.split('/').pop() ?? '').split(':')[1];
        d['imagePullPolicy'] = tag === undefined || tag === 'latest' ? 'Always' : 'IfNotPresent';
      }
      return d;
    });
  }
  return s;
}

const DEFAULT_TOLERATIONS = ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'];

/**
 * What create-time admission adds on a default cluster: Priority (`priority: 0` with no priority
 * class), the `preemptionPolicy` default, and DefaultTolerationSeconds' not-ready/unreachable
 * NoExecute tolerations (300 s) unless the pod tolerates those taints already.
 */
function admitPodSpec(spec: Record<string, unknown>): Record<string, unknown> {
  const s = { ...spec };
  s['priority'] ??= 0;
  s['preemptionPolicy'] ??= 'PreemptLowerPriority';
  const tolerations: unknown[] = Array.isArray(s['tolerations']) ? [...(s['tolerations'] as unknown[])] : [];
  for (const key of DEFAULT_TOLERATIONS) {
    const covered = tolerations.some(
      (t) =>
        isRecord(t) &&
        (t['key'] === key || (t['key'] === undefined && t['operator'] === 'Exists')) &&
        (t['effect'] === undefined || t['effect'] === 'NoExecute'),
    );
    if (!covered) tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
  }
  s['tolerations'] = tolerations;
  return s;
}

/** Spec members a pod update may change; everything else is immutable after create. */
function mutablePodSpecView(spec: unknown): string {
  if (!isRecord(spec)) return stable(spec ?? null);
  const s: Record<string, unknown> = { ...spec };
  delete s['activeDeadlineSeconds'];
  delete s['tolerations'];
  delete s['terminationGracePeriodSeconds'];
  for (const list of ['containers', 'initContainers']) {
    const cs = s[list];
    if (Array.isArray(cs)) s[list] = cs.map((c: unknown) => (isRecord(c) ? { ...c, image: undefined } : c));
  }
  return stable(s);
}

const POD_UPDATE_FORBIDDEN =
  'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,' +
  '`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),' +
  '`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

/** The pod lists strategic merge patch merges by key (`patchMergeKey` in core/v1 types.go). */
const POD_MERGE_KEYS: Record<string, string> = {
  'spec.containers': 'name',
  'spec.initContainers': 'name',
  'spec.ephemeralContainers': 'name',
  'spec.containers.env': 'name',
  'spec.initContainers.env': 'name',
  'spec.containers.ports': 'containerPort',
  'spec.initContainers.ports': 'containerPort',
  'spec.containers.volumeMounts': 'mountPath',
  'spec.initContainers.volumeMounts': 'mountPath',
  'spec.volumes': 'name',
  'spec.imagePullSecrets': 'name',
  'spec.hostAliases': 'ip',
  'spec.readinessGates': 'conditionType',
  'status.conditions': 'type',
  'status.containerStatuses': 'name',
  'status.initContainerStatuses': 'name',
  'status.podIPs': 'ip',
  ...META_MERGE_KEYS,
};

const base = genericStrategy({ statusSubresource: true, namespaced: true, builtIn: true });

/** The built-in core/v1 pods resource. */
export const POD_RESOURCE: ResourceType = resourceType(
  { group: '', version: 'v1', kind: 'Pod', plural: 'pods', singular: 'pod', shortNames: ['po'] },
  {
    ...base,
    returnDeletedObject: true,
    strategicMergeKeys: POD_MERGE_KEYS,
    categories: ['all'],
    supportedFields: [
      'metadata.name',
      'metadata.namespace',
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
      'spec.hostNetwork',
      'status.phase',
      'status.podIP',
      'status.nominatedNodeName',
    ],
    fieldSet(obj) {
      const p = obj as ApiServerPod;
      const spec = isRecord(p.spec) ? p.spec : {};
      const status = isRecord(p.status) ? p.status : {};
      return {
        'metadata.name': str(p.metadata.name),
        'metadata.namespace': str(p.metadata.namespace),
        'spec.nodeName': str(spec.nodeName),
        'spec.restartPolicy': str(spec.restartPolicy),
        'spec.schedulerName': str(spec['schedulerName']),
        'spec.serviceAccountName': str(spec['serviceAccountName']),
        'spec.hostNetwork': spec['hostNetwork'] === true ? 'true' : 'false',
        'status.phase': str(status.phase),
        'status.podIP': str(status.podIP),
        'status.nominatedNodeName': str(status['nominatedNodeName']),
      };
    },
    prepareForCreate(obj, direct) {
      const p = obj as ApiServerPod;
      p.spec = admitPodSpec(defaultPodSpec(isRecord(p.spec) ? p.spec : {})) as NonNullable<ApiServerPod['spec']>;
      if (!direct || !isRecord(p.status)) p.status = { phase: 'Pending', qosClass: qosClass(p) };
    },
    prepareForUpdate(next) {
      const p = next as ApiServerPod;
      p.spec = defaultPodSpec(isRecord(p.spec) ? p.spec : {}) as NonNullable<ApiServerPod['spec']>;
    },
    validate(obj) {
      const errs: FieldError[] = [];
      const spec = (obj as ApiServerPod).spec;
      const containers = isRecord(spec) ? spec.containers : undefined;
      if (!Array.isArray(containers) || containers.length === 0) errs.push(required('spec.containers', ''));
      else {
        containers.forEach((c: unknown, i) => {
          if (!isRecord(c) || typeof c['name'] !== 'string' || c['name'] === '')
            errs.push(required(`spec.containers[${i}].name`, ''));
          if (!isRecord(c) || typeof c['image'] !== 'string' || c['image'] === '')
            errs.push(required(`spec.containers[${i}].image`, ''));
        });
      }
      return errs;
    },
    validateUpdate(next, old) {
      return mutablePodSpecView(next['spec']) !== mutablePodSpecView(old['spec'])
        ? [forbidden('spec', POD_UPDATE_FORBIDDEN)]
        : [];
    },
    generationPart: (o: ApiServerObject) => o['spec'] ?? null,
    gracefulDelete: true,
    tracksGeneration: true,
    // The pods/status strategy resets spec only: label and annotation changes in a status write stay.
    prepareStatusMetadata: (old, body) => {
      const meta = { ...old };
      if (body.labels !== undefined) meta.labels = body.labels;
      else delete meta.labels;
      if (body.annotations !== undefined) meta.annotations = body.annotations;
      else delete meta.annotations;
      return meta;
    },
    bookmarkStub: { spec: { containers: null }, status: {} },
    /** Bound, non-terminal pods get the requested or their own grace period; everything else goes at once. */
    gracePeriod(obj, requested) {
      const p = obj as ApiServerPod;
      let grace = requested ?? p.spec?.terminationGracePeriodSeconds ?? 0;
      if ((p.spec?.nodeName ?? '') === '') grace = 0;
      if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded') grace = 0;
      if (grace < 0) grace = 1;
      return grace;
    },
    tableColumns: POD_COLUMNS,
    tableCells: (o, now) => podCells(o as ApiServerPod, now),
  },
);
