import type { Logger } from '@reconcile-loop/primitives';
import type { LeaderElector } from './elector.js';

/** What {@link runWhenLeader} drives. */
export interface RunWhenLeaderOptions {
  /** The elector; `runWhenLeader` runs it (do not call its `run` yourself). */
  readonly elector: LeaderElector;
  /**
   * Starts the leading work of one term. `signal` aborts the moment leadership is lost or `signal`
   * of the options aborts; stop all work then. The returned promise is the work: with
   * `releaseOnCancel`, a graceful stop releases the Lease only once it has settled.
   */
  readonly start: (signal: AbortSignal) => unknown;
  /** Stops everything: the elector (releasing the Lease) and the work. */
  readonly signal: AbortSignal;
  readonly logger?: Logger | undefined;
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) =>
    signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
  );
}

/**
 * Runs `start` once per leadership term, on this replica, while the elector competes: a warm
 * standby keeps whatever it set up before (caches, watches) and only `start`s once it leads. When a
 * term's work ends early the next `start` waits for the next term. Resolves once `signal` aborted,
 * the work settled and the elector stopped (after the release).
 */
export async function runWhenLeader(options: RunWhenLeaderOptions): Promise<void> {
  const { elector, start, signal, logger } = options;
  const election = elector.run(signal);
  const terms = (async () => {
    while (!signal.aborted) {
      let term: AbortSignal;
      try {
        term = await elector.waitForLeadership(signal);
      } catch {
        break; // aborted, or the elector stopped
      }
      if (term.aborted) continue; // lost before this continuation ran
      const both = AbortSignal.any([term, signal]);
      const work = (async () => start(both))();
      elector.track(work);
      try {
        await work;
      } catch (error) {
        if (!both.aborted) logger?.error({ err: error }, 'leading work failed while still leading');
      }
      await aborted(both); // one start per term
    }
  })();
  await Promise.all([election, terms]);
}
