/** The pure part: what a Service wants from the pods the caches hold. No server, no loop. */
import { describe, expect, it } from 'vitest';
import { kinds, type Pod } from '@reconcile-loop/k8s-types';
import { configMapName, desiredConfigMap, endpointsData, podEndpoint, type Service } from '../src/endpoints.js';

const service = (selector: Record<string, string> | undefined, namespace = 'shop'): Service =>
  kinds.Service.schema.parse({ metadata: { name: 'web', namespace, uid: 'svc-1' }, spec: { selector } });

function pod(
  name: string,
  labels: Record<string, string>,
  options: { ready?: boolean; ip?: string; namespace?: string; terminating?: boolean } = {},
): Pod {
  const { ready = true, ip = `10.1.0.${name.length}`, namespace = 'shop', terminating = false } = options;
  return kinds.Pod.schema.parse({
    metadata: { name, namespace, labels, ...(terminating && { deletionTimestamp: '2026-01-01T00:00:00Z' }) },
    status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  });
}

describe('[endpoints: Ready addresses] a pod contributes its IP while Ready, addressed and not terminating', () => {
  it('Ready with an IP → the IP; not Ready, terminating, no IP, no Ready condition → none', () => {
    expect(podEndpoint(pod('a', {}, { ip: '10.1.0.7' }))).toBe('10.1.0.7');
    expect(podEndpoint(pod('a', {}, { ready: false }))).toBeUndefined();
    expect(podEndpoint(pod('a', {}, { terminating: true }))).toBeUndefined();
    expect(
      podEndpoint(
        kinds.Pod.schema.parse({
          metadata: { name: 'a', namespace: 'shop' },
          status: { conditions: [{ type: 'Ready', status: 'True' }] },
        }),
      ),
    ).toBeUndefined();
    expect(
      podEndpoint(kinds.Pod.schema.parse({ metadata: { name: 'a', namespace: 'shop' }, status: { podIP: '10.1.0.7' } })),
    ).toBeUndefined();
  });
});

describe('[endpoints: desired data] a Service wants its selected Ready pods, name → IP, keys sorted', () => {
  it('selects by the whole selector, in its own namespace only', () => {
    const pods = [
      pod('web-b', { app: 'web', tier: 'front' }, { ip: '10.1.0.2' }),
      pod('web-a', { app: 'web', tier: 'front' }, { ip: '10.1.0.1' }),
      pod('web-c', { app: 'web', tier: 'back' }),
      pod('web-d', { app: 'web', tier: 'front' }, { ready: false }),
      pod('web-e', { app: 'web', tier: 'front' }, { namespace: 'other' }),
      pod('db-0', { app: 'db' }),
    ];
    const data = endpointsData(service({ app: 'web', tier: 'front' }), pods);
    expect(data).toEqual({ 'web-a': '10.1.0.1', 'web-b': '10.1.0.2' });
    expect(Object.keys(data!)).toEqual(['web-a', 'web-b']);
  });

  it('no pod selected → {} (the ConfigMap stays, empty); no selector → undefined (no ConfigMap)', () => {
    expect(endpointsData(service({ app: 'web' }), [pod('db-0', { app: 'db' })])).toEqual({});
    expect(endpointsData(service(undefined), [pod('web-0', { app: 'web' })])).toBeUndefined();
    // The view reads an empty selector as none: a Service with `selector: {}` selects nothing.
    expect(endpointsData(service({}), [pod('web-0', { app: 'web' })])).toBeUndefined();
  });

  it('the apply body: the fields this controller owns, the Service as its controller', () => {
    const svc = service({ app: 'web' });
    expect(configMapName(svc)).toBe('web-endpoints');
    expect(desiredConfigMap(svc, { 'web-0': '10.1.0.5' })).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'web-endpoints',
        namespace: 'shop',
        labels: { 'app.kubernetes.io/managed-by': 'endpoints-example', 'endpoints.example.dev/service': 'web' },
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Service', name: 'web', uid: 'svc-1', controller: true, blockOwnerDeletion: true },
        ],
      },
      data: { 'web-0': '10.1.0.5' },
    });
  });
});
