/**
 * The shipped manifests: `deploy/crd.yaml` is the object the controller installs (`cellSetCrd()`),
 * and `deploy/rbac.yaml` grants exactly the verbs the controller uses — no wildcard, nothing
 * cluster-scoped. (That the Role suffices, and that a missing verb fails loudly, is proven against
 * a real kube-apiserver with RBAC in e2e/test/cellset.test.ts.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml, loadYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { cellSetCrd } from '../demo/install.js';

const deploy = join(import.meta.dirname, '..', 'deploy');

describe('the shipped manifests', () => {
  it('[cellset: least-privilege Role] deploy/crd.yaml is cellSetCrd(), with the status subresource and unknown fields preserved in the template', () => {
    const text = readFileSync(join(deploy, 'crd.yaml'), 'utf8');
    // Both parsed by the same YAML reader (JSON is YAML), so the comparison is field by field.
    expect(loadYaml(text)).toEqual(loadYaml(JSON.stringify(cellSetCrd())));
    expect(text.match(/x-kubernetes-preserve-unknown-fields: true/g)).toHaveLength(2);
    expect(text).toContain('status: {}');
  });

  it("[cellset: least-privilege Role] deploy/rbac.yaml: a ServiceAccount, a namespaced Role with exactly the controller's verbs, and its RoleBinding", () => {
    const docs = loadAllYaml(readFileSync(join(deploy, 'rbac.yaml'), 'utf8')) as Array<{
      kind: string;
      metadata: { name: string; namespace?: string };
      rules?: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
    }>;
    expect(docs.map((d) => d.kind)).toEqual(['ServiceAccount', 'Role', 'RoleBinding']);
    expect(docs.every((d) => d.metadata.name === 'cellset-controller' && d.metadata.namespace === 'cells')).toBe(true);
    const grants = Object.fromEntries(
      docs[1]!.rules!.flatMap((r) => r.resources.map((res) => [`${r.apiGroups.join(',')}/${res}`, [...r.verbs].sort()])),
    );
    expect(grants).toEqual({
      'cells.reconcile-loop.dev/cellsets': ['get', 'list', 'patch', 'watch'],
      'cells.reconcile-loop.dev/cellsets/status': ['get', 'update'],
      'cells.reconcile-loop.dev/cellsets/finalizers': ['update'],
      '/pods': ['create', 'delete', 'get', 'list', 'watch'],
      'events.k8s.io/events': ['create', 'patch'],
      'coordination.k8s.io/leases': ['create', 'get', 'list', 'update'],
    });
  });
});
