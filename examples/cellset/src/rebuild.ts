/**
 * The rebuild budget: every terminal or drifted pod goes through one budget per slot —
 * rebuilds after 0, 1, 5 and 30 s (each delay counted from the previous rebuild) — and the failure
 * after the last one **dead-letters** the slot: the controller stops rebuilding it, emits a Warning
 * Event and counts it, until the CellSet's `metadata.generation` changes (a spec edit). Drift alone
 * never lifts a parked slot: a pod a webhook rewrites forever would loop at the slower cadence.
 *
 * The history is kept on the CellSet (an annotation), so a restarted controller resumes
 * the budget instead of granting a fresh one to a slot that has been failing for minutes.
 */
import { REBUILD_HISTORY_ANNOTATION } from './api.js';

/** The default budget: rebuilds after 0, 1, 5 and 30 s, then dead-letter. */
export const DEFAULT_REBUILD_DELAYS_MS: readonly number[] = Object.freeze([0, 1_000, 5_000, 30_000]);

/** One slot's history at one generation. */
export interface SlotHistory {
  /** Rebuilds done at `generation`. */
  readonly count: number;
  /** The CellSet generation the rebuilds were counted at; an entry of an older generation counts as none. */
  readonly generation: number;
  /** When the last rebuild was made (wall clock, epoch ms). */
  readonly lastAt: number;
  /** Dead-lettered: the budget is spent at `generation`. */
  readonly parked?: true | undefined;
}

/** Slot number (as a string, the JSON key) → history. */
export type RebuildHistory = Readonly<Record<string, SlotHistory>>;

/** What to do with a slot whose pod is terminal or drifted. */
export type RebuildDecision =
  | { readonly kind: 'rebuild'; readonly attempt: number }
  | { readonly kind: 'wait'; readonly ms: number; readonly attempt: number }
  | { readonly kind: 'park'; readonly rebuilds: number }
  | { readonly kind: 'parked' };

function isEntry(value: unknown): value is SlotHistory {
  const v = value as Partial<SlotHistory> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    Number.isInteger(v.count) &&
    v.count! >= 0 &&
    Number.isInteger(v.generation) &&
    typeof v.lastAt === 'number' &&
    Number.isFinite(v.lastAt)
  );
}

/**
 * Reads the history annotation. A value that is not the JSON this module writes (hand-edited, cut)
 * is dropped entry by entry, never thrown: the worst case is a fresh budget, logged by the caller.
 */
export function readHistory(annotations: Readonly<Record<string, string>>): { history: RebuildHistory; dropped: string[] } {
  const text = annotations[REBUILD_HISTORY_ANNOTATION];
  if (text === undefined) return { history: {}, dropped: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { history: {}, dropped: ['(not JSON)'] };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return { history: {}, dropped: ['(not an object)'] };
  const history: Record<string, SlotHistory> = {};
  const dropped: string[] = [];
  for (const [slot, entry] of Object.entries(parsed)) {
    if (/^\d+$/.test(slot) && isEntry(entry))
      history[slot] = {
        count: entry.count,
        generation: entry.generation,
        lastAt: entry.lastAt,
        ...(entry.parked === true && { parked: true as const }),
      };
    else dropped.push(slot);
  }
  return { history, dropped };
}

/** The annotation value (keys sorted, so an unchanged history serialises identically). */
export function writeHistory(history: RebuildHistory): string {
  return JSON.stringify(Object.fromEntries(Object.entries(history).sort(([a], [b]) => Number(a) - Number(b))));
}

/** The slot's entry if it counts at `generation` (a spec edit resets every budget). */
export function current(history: RebuildHistory, slot: number, generation: number): SlotHistory | undefined {
  const entry = history[String(slot)];
  return entry !== undefined && entry.generation === generation ? entry : undefined;
}

/** The slot is dead-lettered at `generation`. */
export function isParked(history: RebuildHistory, slot: number, generation: number): boolean {
  return current(history, slot, generation)?.parked === true;
}

/**
 * The decision for a slot whose pod needs replacing, at wall time `now`. Rebuild `n` (1-based) may
 * happen `delaysMs[n-1]` after rebuild `n-1`, the first at once (`delaysMs[0]` is 0); once
 * `delaysMs.length` rebuilds were spent at this generation, the next need parks the slot.
 */
export function decide(
  history: RebuildHistory,
  slot: number,
  generation: number,
  now: number,
  delaysMs: readonly number[],
): RebuildDecision {
  const entry = current(history, slot, generation);
  if (entry?.parked) return { kind: 'parked' };
  const count = entry?.count ?? 0;
  if (count >= delaysMs.length) return { kind: 'park', rebuilds: count };
  // The first rebuild has no previous one to count from: it is due at once (the budget starts at 0).
  const due = entry === undefined ? now : entry.lastAt + delaysMs[count]!;
  return due <= now ? { kind: 'rebuild', attempt: count + 1 } : { kind: 'wait', ms: due - now, attempt: count + 1 };
}

/** The history after a rebuild of `slot` at `now`. */
export function recordRebuild(history: RebuildHistory, slot: number, generation: number, now: number): RebuildHistory {
  const count = (current(history, slot, generation)?.count ?? 0) + 1;
  return { ...history, [String(slot)]: { count, generation, lastAt: now } };
}

/** The history after `slot` was dead-lettered. */
export function recordPark(history: RebuildHistory, slot: number, generation: number, now: number): RebuildHistory {
  const entry = current(history, slot, generation);
  return { ...history, [String(slot)]: { count: entry?.count ?? 0, generation, lastAt: entry?.lastAt ?? now, parked: true } };
}

/**
 * Keeps only the entries that still mean something: slots the spec names, at the current
 * generation: the history keeps only pods the spec still names.
 */
export function prune(history: RebuildHistory, replicas: number, generation: number): RebuildHistory {
  return Object.fromEntries(
    Object.entries(history).filter(([slot, entry]) => Number(slot) < replicas && entry.generation === generation),
  );
}
