import { KubeClient } from '@reconcile-loop/kube-client';
import type { Logger } from '@reconcile-loop/primitives';
import { ReplicaClock, type FakeLeaseServer, type LeaseFault } from '@reconcile-loop/test-support';
import { LeaderElector, LeaseLock, type LeaderElectorOptions } from '../src/index.js';

/** What happens to one request on its way: when it commits, when its answer arrives, or which half is lost. */
export type Fault = LeaseFault;

/** A logger that keeps every line. */
export function recordingLogger(): Logger & { lines: { level: string; message: string; fields: Record<string, unknown> }[] } {
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => void lines.push({ level, message, fields });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A replica: its clock, its client on the fake server, its elector. */
export interface Replica {
  readonly id: string;
  readonly clock: ReplicaClock;
  readonly elector: LeaderElector;
  readonly controller: AbortController;
  readonly logger: ReturnType<typeof recordingLogger>;
  /** Set to make the replica vanish from the network (a kill). */
  blackHole: boolean;
  run: Promise<void> | undefined;
}

export function replica(
  server: FakeLeaseServer,
  id: string,
  options: { offsetMs?: number; faults?: () => Fault; elector?: Partial<LeaderElectorOptions> } = {},
): Replica {
  const clock = new ReplicaClock(server.clock, options.offsetMs ?? 0);
  const logger = recordingLogger();
  const self: Replica = {
    id,
    clock,
    logger,
    blackHole: false,
    controller: new AbortController(),
    run: undefined,
    elector: undefined as unknown as LeaderElector,
  };
  const client = new KubeClient({
    server: 'https://fake.invalid',
    rateLimit: false,
    clock,
    requestTimeoutMs: 30_000,
    // A partition, decided as each request is sent: it never reaches the server.
    transport: server.transport(clock, {
      faults: () => (self.blackHole ? { drop: 'request' } : (options.faults?.() ?? {})),
    }),
  });
  const lock = new LeaseLock({ client, namespace: 'default', name: 'lock', identity: id });
  (self as { elector: LeaderElector }).elector = new LeaderElector({
    lock,
    clock,
    wallClock: () => 1_800_000_000_000 + clock.now(),
    random: () => 0.5,
    logger,
    ...options.elector,
  });
  return self;
}

export function start(r: Replica): Replica {
  r.run = r.elector.run(r.controller.signal);
  return r;
}
