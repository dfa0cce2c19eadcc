import type { ShardGate } from '@reconcile-loop/loop';

/** What {@link observedGate} tells of each admission. */
export interface GateObserver {
  /** `enter` admitted `hash`; `startedAt` is the wall clock read just before `enter` was asked. */
  admitted(hash: string, startedAt: number): void;
  /** The admission of `hash` was released (after the gate's own release ran). */
  released?(hash: string): void;
}

/**
 * `gate` as it is, with each admission told to `on`: the demo's replicas tell the story's overlap
 * check an interval that encloses the gate's own (its start read before `enter`, its end after the
 * release); the e2e test records which hashes each replica admitted. Every other member of the
 * gate (ranges, `onLost`, `status`, `ready`) is passed through, so no check is lost by wrapping.
 */
export function observedGate(gate: ShardGate, on: GateObserver): ShardGate {
  const { onLost, status, ready } = gate;
  return {
    get ranges() {
      return gate.ranges;
    },
    onRangesChanged: (listener) => gate.onRangesChanged(listener),
    admits: (hash) => gate.admits(hash),
    enter: (hash) => {
      const startedAt = Date.now();
      const release = gate.enter(hash);
      if (release === undefined) return undefined;
      on.admitted(hash, startedAt);
      return () => {
        release();
        on.released?.(hash);
      };
    },
    ...(onLost !== undefined && { onLost: (listener: (reason: unknown) => void) => onLost.call(gate, listener) }),
    ...(status !== undefined && { status: () => status.call(gate) }),
    ...(ready !== undefined && { ready: () => ready.call(gate) }),
  };
}
