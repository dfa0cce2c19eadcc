import type { SourceHealth } from '@reconcile-loop/object-store';

/**
 * A source's health as a healthy, synced reflector reports it (listed, streaming, no failures, no
 * quarantine), with `overrides` for what a test is about.
 */
export function healthySource(overrides: Partial<SourceHealth> = {}): SourceHealth {
  return {
    listed: true,
    streaming: true,
    lastListAt: 0,
    lastEventAt: 0,
    lastError: undefined,
    consecutiveFailures: 0,
    quarantined: [],
    ...overrides,
  };
}
