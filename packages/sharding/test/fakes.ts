import { KubeClient } from '@reconcile-loop/kube-client';
import { ReplicaClock, type FakeLeaseServer, type LeaseFault } from '@reconcile-loop/test-support';
import { ShardMember, type ShardMemberOptions } from '../src/index.js';

/** What happens to one request: when it commits on the server, when its answer arrives. */
export type Fault = Pick<LeaseFault, 'commitDelayMs' | 'responseDelayMs'>;

/** A replica: its clock, its client on the fake server, its member. */
export interface Replica {
  readonly id: string;
  readonly clock: ReplicaClock;
  readonly member: ShardMember;
  readonly controller: AbortController;
  /** Set to make the replica vanish from the network (a kill). */
  dead: boolean;
  run: Promise<void> | undefined;
}

export const TIMINGS = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;

export function replica(
  server: FakeLeaseServer,
  id: string,
  options: {
    faults?: (method: string, url: URL) => Fault;
    member?: Partial<ShardMemberOptions>;
    onCommit?: (method: string, url: URL) => void;
    /** Answers a request in place of the server when it returns a status and a body (e.g. a 403 Status). */
    refuse?: (method: string, url: URL) => { status: number; body: unknown } | undefined;
  } = {},
): Replica {
  const clock = new ReplicaClock(server.clock);
  const self = { id, clock, dead: false, controller: new AbortController(), run: undefined } as Omit<Replica, 'member'> & {
    member: ShardMember;
  };
  const client = new KubeClient({
    server: 'https://fake.invalid',
    rateLimit: false,
    clock,
    requestTimeoutMs: 30_000,
    transport: refusing(
      server.transport(clock, { faults: options.faults, dead: () => self.dead, onCommit: options.onCommit }),
      options.refuse,
    ),
  });
  self.member = new ShardMember({
    client,
    namespace: 'default',
    ring: 'demo',
    identity: id,
    virtualNodes: 8,
    clock,
    wallClock: () => 1_800_000_000_000 + clock.now(),
    random: () => 0.5,
    ...TIMINGS,
    ...options.member,
  });
  return self;
}

type Transport = ReturnType<FakeLeaseServer['transport']>;

/** `transport`, except for the requests `refuse` answers itself (at once, never reaching the server). */
function refusing(
  transport: Transport,
  refuse: ((method: string, url: URL) => { status: number; body: unknown } | undefined) | undefined,
): Transport {
  if (refuse === undefined) return transport;
  return async (request) => {
    const answer = refuse(request.method, request.url);
    if (answer === undefined) return transport(request);
    return {
      status: answer.status,
      header: (name) => (name.toLowerCase() === 'content-type' ? 'application/json' : undefined),
      body: (async function* () {
        yield JSON.stringify(answer.body);
      })(),
      close() {},
    };
  };
}

export function start(r: Replica): Replica {
  r.run = r.member.run(r.controller.signal);
  return r;
}
