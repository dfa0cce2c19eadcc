import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientGoCheck, readVersions, runClientGoCheck, uniqueNamespace, type ClientGoReport } from '../src/index.js';
import { e2eAvailability, useE2eEnvironment } from '../src/environment.js';

// client-go's own clients (e2e/clients/client-go, client-go v0.37.2 from the Go module proxy) against
// the embedded apiserver and the real kube-apiserver in one test: typed writes in protobuf, a shared
// informer with the default watch-list initial list, server-side apply and its conflict, an update
// conflict, the dynamic client and a dynamic informer on a custom resource, leader election on a
// Lease, an eviction and deletes with DeleteOptions. The two reports must be equal: a difference is a
// bug in the embedded server, or one of the recorded, explained differences below.

const availability = e2eAvailability();
const env = useE2eEnvironment(availability);

/**
 * Facts the servers legitimately answer differently, each with its reason (ALIGNMENT.md, "Real
 * clients"): removed from both reports before they are compared. Empty: none today.
 */
const RECORDED_DIFFERENCES: ReadonlyArray<{ check: string; fact: string; why: string }> = [];

function comparable(report: ClientGoReport): ClientGoReport {
  const out: ClientGoReport = structuredClone(report);
  for (const d of RECORDED_DIFFERENCES) delete out[d.check]?.[d.fact];
  return out;
}

let embedded: ApiServer;
let binary: string;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rl-clients-'));
  embedded = await startApiServer();
  // First use builds the program (minutes on a cold Go build cache; CI builds it in the k8s-<line> cell first).
  binary = await clientGoCheck();
}, 25 * 60_000);
afterAll(async () => {
  await embedded?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!availability.run)(
  `client-go v0.37.2 against the embedded apiserver and kube-apiserver ${readVersions().kubernetes}`,
  () => {
    it('[testing: real clients] client-go informers (watch-list), typed protobuf writes, apply conflicts, dynamic informer and leader election report the same on both servers', async () => {
      const kubeconfigPath = join(dir, 'embedded.kubeconfig');
      await embedded.writeKubeconfig(kubeconfigPath);
      const ns = uniqueNamespace('client-go');
      const [mine, real] = await Promise.all([
        runClientGoCheck(binary, kubeconfigPath, ns),
        runClientGoCheck(binary, env().endpoint.kubeconfigPath, ns),
      ]);
      // The real server is the reference: every check passes there (else the program, not the embedded server, is wrong).
      for (const [check, facts] of Object.entries(real)) {
        if (check === 'applyConflict' || check === 'podUpdateStale') expect(facts, check).toMatchObject({ isConflict: true });
        else if ('ok' in facts) expect(facts, check).toMatchObject({ ok: true });
      }
      expect(real['informerSync']).toEqual({ synced: true, under5s: true, listedBefore: true });
      expect(comparable(mine)).toEqual(comparable(real));
    }, 300_000);
  },
);
