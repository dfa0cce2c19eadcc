/**
 * CustomResourceDefinitions (apiextensions.k8s.io/v1): the kind, its validation (name is
 * `<plural>.<group>`, one storage version, a scope), and how a definition becomes a served
 * resource. The establishing itself (NamesAccepted, Established, serving) is crd-controller.ts.
 */
import { isRecord } from '../engine/meta.js';
import { invalidValue, notSupported, required, type FieldError } from '../status.js';
import type { ApiServerObject } from '../types.js';
import { customResource, genericStrategy, resourceType, type ResourceType } from './resource.js';

/** The finalizer the apiserver puts on every CRD so its instances are removed before it goes. */
export const CRD_CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';

interface CrdSpec {
  group: string;
  scope: string;
  names: { plural: string; singular?: string; kind: string; listKind?: string; shortNames?: string[] };
  versions: Array<{ name: string; served: boolean; storage: boolean; subresources?: { status?: unknown } }>;
}

/** The spec of a valid CRD (call after {@link validateCrd} found nothing). */
export function crdSpec(o: ApiServerObject): CrdSpec {
  return o['spec'] as CrdSpec;
}

function validateCrd(o: ApiServerObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = o['spec'];
  if (!isRecord(spec)) return [required('spec', '')];
  const group = spec['group'];
  if (typeof group !== 'string' || group === '') errs.push(required('spec.group', ''));
  else if (!group.includes('.')) errs.push(invalidValue('spec.group', group, 'should be a domain with at least one dot'));
  const names = isRecord(spec['names']) ? spec['names'] : {};
  const plural = names['plural'];
  if (typeof plural !== 'string' || plural === '') errs.push(required('spec.names.plural', ''));
  else if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(plural))
    errs.push(
      invalidValue(
        'spec.names.plural',
        plural,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'",
      ),
    );
  if (typeof names['kind'] !== 'string' || names['kind'] === '') errs.push(required('spec.names.kind', ''));
  if (typeof group === 'string' && typeof plural === 'string' && o.metadata.name !== `${plural}.${group}`) {
    errs.push(invalidValue('metadata.name', o.metadata.name ?? '', 'must be spec.names.plural+"."+spec.group'));
  }
  if (spec['scope'] !== 'Namespaced' && spec['scope'] !== 'Cluster')
    errs.push(notSupported('spec.scope', spec['scope'] ?? '', ['Cluster', 'Namespaced']));
  const versions = spec['versions'];
  if (!Array.isArray(versions) || versions.length === 0) errs.push(required('spec.versions', ''));
  else {
    const storage = versions.filter((v: unknown) => isRecord(v) && v['storage'] === true).length;
    if (storage !== 1)
      errs.push(invalidValue('spec.versions', versions, 'must have exactly one version marked as storage version'));
    versions.forEach((v: unknown, i) => {
      if (!isRecord(v) || typeof v['name'] !== 'string' || !/^v\d+((alpha|beta)\d+)?$/.test(v['name']))
        errs.push(
          invalidValue(`spec.versions[${i}].name`, isRecord(v) ? v['name'] : v, 'must be a valid version (e.g. v1, v1beta1)'),
        );
      if (isRecord(v) && typeof v['served'] !== 'boolean') errs.push(required(`spec.versions[${i}].served`, ''));
    });
  }
  return errs;
}

const base = genericStrategy({ statusSubresource: true, namespaced: false, builtIn: true });

/** apiextensions.k8s.io/v1 CustomResourceDefinition. */
export const CRD_RESOURCE: ResourceType = resourceType(
  {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    kind: 'CustomResourceDefinition',
    plural: 'customresourcedefinitions',
    singular: 'customresourcedefinition',
    shortNames: ['crd', 'crds'],
  },
  {
    ...base,
    tracksGeneration: true,
    prepareForCreate(obj) {
      const spec = isRecord(obj['spec']) ? obj['spec'] : {};
      const storage = Array.isArray(spec['versions'])
        ? spec['versions'].find((v: unknown) => isRecord(v) && v['storage'] === true)
        : undefined;
      obj['status'] = {
        acceptedNames: { plural: '', kind: '' },
        storedVersions: isRecord(storage) && typeof storage['name'] === 'string' ? [storage['name']] : [],
      };
    },
    validate: validateCrd,
    // The CRD registry's DELETE adds the cleanup finalizer and a Terminating condition; the CRD stays
    // until the finalizer is removed (after its instances are gone).
    holdsDeletion: (obj) =>
      obj.metadata.deletionTimestamp === undefined || (obj.metadata.finalizers ?? []).includes(CRD_CLEANUP_FINALIZER),
    prepareForDelete(obj) {
      const fin = Array.isArray(obj.metadata.finalizers) ? obj.metadata.finalizers : [];
      if (!fin.includes(CRD_CLEANUP_FINALIZER)) obj.metadata.finalizers = [...fin, CRD_CLEANUP_FINALIZER];
      const status = isRecord(obj['status']) ? obj['status'] : {};
      const conditions = Array.isArray(status['conditions'])
        ? status['conditions'].filter((c: unknown) => !(isRecord(c) && c['type'] === 'Terminating'))
        : [];
      conditions.push({
        type: 'Terminating',
        status: 'True',
        reason: 'InstanceDeletionInProgress',
        message: 'CustomResource deletion is in progress',
      });
      obj['status'] = { ...status, conditions };
    },
  },
);

/** The served resources a CRD defines: one per served version. */
export function servedResources(crd: ApiServerObject): ResourceType[] {
  const spec = crdSpec(crd);
  const names = spec.names;
  return spec.versions
    .filter((v) => v.served)
    .map((v) =>
      customResource({
        group: spec.group,
        version: v.name,
        kind: names.kind,
        plural: names.plural,
        singular: names.singular ?? names.kind.toLowerCase(),
        shortNames: names.shortNames ?? [],
        statusSubresource: isRecord(v.subresources) && v.subresources['status'] !== undefined,
        namespaced: spec.scope === 'Namespaced',
      }),
    );
}
