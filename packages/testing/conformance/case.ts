/**
 * What a conformance case is: the shape every case file (`cases.ts`, `watch-list-cases.ts`)
 * declares its cases in, and the kube-apiserver personalities they run on.
 */
import type { Target } from './target.js';

/** Which kube-apiserver personality a case runs on. */
export type Personality = 'cached' | 'uncached';

/** One conformance case. */
export interface ConformanceCase {
  id: string;
  title: string;
  /** Personalities it runs on (default both). */
  personalities?: Personality[];
  /** Set when the embedded server is known to differ: why, kept visible in the report. */
  knownDifference?: string;
  /** Set when the real server's answer depends on timing: the case is reported, never asserted. */
  nondeterministic?: string;
  /** A known difference on one personality only. */
  knownDifferenceOn?: Partial<Record<Personality, string>>;
  run(t: Target, ns: string): Promise<unknown>;
}
