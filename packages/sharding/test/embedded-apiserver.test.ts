import { httpTransport, KubeClient, staticAuth, type Transport } from '@reconcile-loop/kube-client';
import { shardHash } from '@reconcile-loop/primitives';
import fc from 'fast-check';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ShardMember } from '../src/index.js';

// The same members over real HTTP against the embedded apiserver, on the system clock with short
// timings (client-go's ratios: lease 2 s, renew deadline 1.2 s, retry 0.4 s). Every wait has a deadline.

// Hashes of uids (random, as the apiserver's are): FNV-1a of names that differ only in a trailing
// number falls in a narrow band of the space (see the README), so `parent-${i}` would not reach every member.
const HASHES = fc.sample(fc.uuid(), { seed: 27, numRuns: 300 }).map((uid) => shardHash(uid));

interface Member {
  readonly id: string;
  readonly member: ShardMember;
  readonly controller: AbortController;
  dead: boolean;
  run: Promise<void>;
}

let server: ApiServer;
let members: Member[] = [];

beforeEach(async () => {
  server = await startApiServer();
  members = [];
});

afterEach(async () => {
  for (const m of members) m.controller.abort();
  await Promise.all(members.map((m) => m.run));
  await server.close();
});

function join(id: string): Member {
  const inner = httpTransport(staticAuth({ server: server.url }));
  const self = { id, controller: new AbortController(), dead: false } as Member;
  // A killed process: nothing it sends arrives, nothing is answered.
  const transport: Transport = (request) =>
    self.dead
      ? new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true }))
      : inner(request);
  const client = new KubeClient({ server: server.url, rateLimit: false, transport });
  (self as { member: ShardMember }).member = new ShardMember({
    client,
    namespace: 'default',
    ring: 'web',
    identity: id,
    leaseDurationMs: 2_000,
    renewDeadlineMs: 1_200,
    retryPeriodMs: 400,
  });
  self.run = self.member.run(self.controller.signal);
  members.push(self);
  return self;
}

function noDoubleAdmission(): void {
  for (const h of HASHES) {
    const admitting = members.filter((m) => m.member.admits(h));
    if (admitting.length > 1) throw new Error(`${h} admitted by ${admitting.map((m) => m.id).join(', ')}`);
  }
}

/** Polls every 10 ms, checking that no hash is admitted twice, until `predicate` holds (fails after `limitMs`). */
async function until(predicate: () => boolean, limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    noDoubleAdmission();
    if (predicate()) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const everyHashAdmittedBy = (live: readonly Member[]) => HASHES.every((h) => live.some((m) => m.member.admits(h)));

async function leaseOf(id: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.url}/apis/coordination.k8s.io/v1/namespaces/default/leases/web-${id}`);
  return (await response.json()) as Record<string, unknown>;
}

describe('[sharding: embedded apiserver] members on real Leases over HTTP', () => {
  it('[sharding: join] three members split the space, each Lease labelled and carrying its acknowledged ring', async () => {
    const [a, b, c] = [join('a'), join('b'), join('c')];
    // Each member admits a share of its own (none is empty), and together they admit every hash.
    await until(
      () =>
        [a, b, c].every((m) => m.member.members.length === 3 && HASHES.some((h) => m.member.admits(h))) &&
        everyHashAdmittedBy([a, b, c]),
      15_000,
    );
    const lease = await leaseOf('a');
    const metadata = lease['metadata'] as { labels: Record<string, string>; annotations: Record<string, string> };
    expect(metadata.labels['sharding.reconcile-loop.dev/ring']).toBe('web');
    expect(JSON.parse(metadata.annotations['sharding.reconcile-loop.dev/claim']!)).toEqual({
      members: ['a', 'b', 'c'],
      virtualNodes: 32,
    });
    expect((lease['spec'] as Record<string, unknown>)['holderIdentity']).toBe('a');
  });

  it('[sharding: expiry] a killed member leaves after its Lease expired; a stopped one releases its Lease and leaves at once', async () => {
    const [a, b, c] = [join('a'), join('b'), join('c')];
    await until(() => everyHashAdmittedBy([a, b, c]), 15_000);
    c.dead = true;
    c.controller.abort();
    await until(() => a.member.members.length === 2 && b.member.members.length === 2 && everyHashAdmittedBy([a, b]), 15_000);
    expect(((await leaseOf('c'))['spec'] as Record<string, unknown>)['holderIdentity']).toBe('c'); // never released: expired
    b.controller.abort();
    await b.run;
    expect(((await leaseOf('b'))['spec'] as Record<string, unknown>)['holderIdentity']).toBe(''); // released after draining
    await until(() => a.member.members.length === 1 && everyHashAdmittedBy([a]), 15_000);
  });
});
