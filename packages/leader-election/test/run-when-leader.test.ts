import { ManualClock } from '@reconcile-loop/primitives';
import { describe, expect, it } from 'vitest';
import { runWhenLeader } from '../src/index.js';
import { FakeLeaseServer } from '@reconcile-loop/test-support';
import { replica } from './fakes.js';

describe('[leader_election: warm standby] runWhenLeader starts the work once per term, on the leader only', () => {
  it('a standby does its warm-up but starts nothing; it starts on takeover; a lost term aborts the work at once and the next term starts it again', async () => {
    const clock = new ManualClock(1_000_000);
    const server = new FakeLeaseServer(clock);
    const a = replica(server, 'a');
    const b = replica(server, 'b');
    const log: string[] = [];
    const work = (who: string) => async (signal: AbortSignal) => {
      log.push(`${who} start`);
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      log.push(`${who} abort ${(signal.reason as { reason?: string }).reason}`);
    };
    const runA = runWhenLeader({ elector: a.elector, start: work('a'), signal: a.controller.signal });
    await clock.advanceAsync(0);
    const runB = runWhenLeader({ elector: b.elector, start: work('b'), signal: b.controller.signal });
    await clock.advanceAsync(30_000);
    expect(log).toEqual(['a start']);
    // Someone else takes the lease: a's work is aborted at its very next renewal.
    server.put('default', 'lock', { holderIdentity: 'x', leaseDurationSeconds: 15, leaseTransitions: 1 });
    await clock.advanceAsync(2_000);
    expect(log).toEqual(['a start', 'a abort other-holder']);
    // x never renews: after 15 s from observing it, a or b takes over and starts once.
    await clock.advanceAsync(20_000);
    expect(log.filter((l) => l.endsWith('start'))).toHaveLength(2);
    const second = log.at(-1)!;
    expect(second === 'a start' || second === 'b start').toBe(true);
    a.controller.abort();
    b.controller.abort();
    await clock.advanceAsync(15_000);
    await Promise.all([runA, runB]);
    expect(log.at(-1)!.startsWith(`${second[0]} abort`)).toBe(true);
    expect(log.filter((l) => l.endsWith('start'))).toHaveLength(2);
  });

  it('work that ends early is not restarted within the same term; a failing start is logged', async () => {
    const clock = new ManualClock(0);
    const server = new FakeLeaseServer(clock);
    const a = replica(server, 'a');
    let starts = 0;
    const run = runWhenLeader({
      elector: a.elector,
      signal: a.controller.signal,
      logger: a.logger,
      start: async () => {
        starts += 1;
        throw new Error('reconcile setup failed');
      },
    });
    await clock.advanceAsync(20_000);
    expect(starts).toBe(1);
    expect(
      a.logger.lines.some(
        (l) => l.level === 'error' && (l.fields['err'] as Error | undefined)?.message === 'reconcile setup failed',
      ),
    ).toBe(true);
    a.controller.abort();
    await clock.advanceAsync(0);
    await run;
    expect(server.spec('default', 'lock')).toMatchObject({ holderIdentity: '' });
  });
});
