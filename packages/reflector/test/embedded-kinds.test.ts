/**
 * k8s-types' `kinds` table as a reflector and a client consume it (issue 23 item 5): one entry spread
 * into `kubeReflector` gives its resource and its view; `client.resource(entry.resource)` writes with
 * server-side apply, `kind` filling in `apiVersion`. Over real HTTP against the embedded apiserver.
 */
import { kinds, labelSelectorMatcher, type KindView } from '@reconcile-loop/k8s-types';
import { KubeClient, apply } from '@reconcile-loop/kube-client';
import { afterEach, describe, expect, it } from 'vitest';
import { kubeReflector } from '../src/index.js';
import { fastClock, kubeConfigFor, runCleanups, server, tapOf } from './embedded-helpers.js';

const NS = 'ml';

afterEach(runCleanups);

describe('built-in kinds through the reflector', () => {
  it('[k8s_types: Built-in kinds] kubeReflector({ ...kinds.Service }) and kinds.ConfigMap.resource with apply: a Service and a ConfigMap written and streamed as their views (embedded apiserver)', async () => {
    const s = await server();
    s.createNamespace(NS);
    const client = new KubeClient({ kubeConfig: kubeConfigFor(s), rateLimit: false });
    const fieldManager = 'kinds-test';
    const force = true;
    await apply(
      client.resource(kinds.Service.resource).inNamespace(NS),
      { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] } },
      { fieldManager, force },
    );
    const written = await apply(
      client.resource(kinds.ConfigMap.resource, kinds.ConfigMap.schema).inNamespace(NS),
      { metadata: { name: 'web-endpoints' }, data: { 'web-0': '10.1.0.7' } },
      { fieldManager, force },
    );
    expect(written.data).toEqual({ 'web-0': '10.1.0.7' });

    const services = kubeReflector({ name: 'services', kubeClient: client, ...kinds.Service, namespace: NS, clock: fastClock });
    const { tap } = tapOf<KindView<'Service'>>(services);
    const listing = await tap.next('the Service listing');
    expect(listing.type).toBe('replace');
    const web = listing.type === 'replace' ? listing.objects.get(`${NS}/web`) : undefined;
    expect(web?.spec).toMatchObject({ selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] });
    expect(labelSelectorMatcher(web?.spec.selector && { matchLabels: web.spec.selector })({ app: 'web' })).toBe(true);

    await apply(
      client.resource(kinds.Service.resource).inNamespace(NS),
      { metadata: { name: 'external' }, spec: { type: 'ClusterIP', ports: [{ port: 443 }] } },
      { fieldManager, force },
    );
    const added = await tap.next('the selector-less Service');
    expect(added.type === 'upsert' && [added.key, added.object.spec.selector]).toEqual([`${NS}/external`, undefined]);

    const configMaps = kubeReflector({
      name: 'configmaps',
      kubeClient: client,
      ...kinds.ConfigMap,
      namespace: NS,
      clock: fastClock,
    });
    const cms = tapOf<KindView<'ConfigMap'>>(configMaps).tap;
    const cmListing = await cms.next('the ConfigMap listing');
    expect(cmListing.type === 'replace' && cmListing.objects.get(`${NS}/web-endpoints`)?.data).toEqual({ 'web-0': '10.1.0.7' });
  });
});
