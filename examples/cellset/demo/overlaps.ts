/**
 * The check `./dev demo --shards N` ends with: no CellSet was reconciled by two replicas at once.
 * Its input is what the replicas themselves printed (shard-replica.ts): for every admission, the
 * instant before the gate's `enter` and the instant after its release, on `Date.now()` — one clock
 * for every process of one machine, so no clock-skew bound is needed. Each interval encloses the
 * reconcile call (the loop enters right before the call and releases once it settled), so disjoint
 * intervals mean disjoint reconciles.
 */

/** One admission of `key` by `replica`: `[start, end]` in epoch ms; `end` is `Infinity` while it is still open. */
export interface Interval {
  readonly replica: string;
  readonly key: string;
  readonly start: number;
  readonly end: number;
}

/** A replica's `enter` / `release` lines, in the order it printed them. */
export interface AdmissionEvent {
  readonly e: 'enter' | 'release';
  readonly t: number;
  /** The `shardHash` of the CellSet's uid the gate was asked about. */
  readonly h: string;
}

/**
 * A replica's admissions as intervals; `keyOf` names the CellSet of a hash. An admission still open
 * at the end closes at `openEnd`: when the process was killed (it runs no code after that), or
 * `Infinity` (a process that may still be reconciling overlaps everything after its start).
 * @throws {Error} for a release without an enter, or a hash no CellSet has: the record itself is wrong.
 */
export function intervalsOf(
  replica: string,
  events: readonly AdmissionEvent[],
  keyOf: (hash: string) => string | undefined,
  openEnd = Number.POSITIVE_INFINITY,
): Interval[] {
  const open = new Map<string, number[]>();
  const out: Interval[] = [];
  const key = (h: string): string => {
    const k = keyOf(h);
    if (k === undefined) throw new Error(`${replica} admitted hash ${h}, which no CellSet's uid has`);
    return k;
  };
  for (const x of events) {
    if (x.e === 'enter') {
      open.set(x.h, [...(open.get(x.h) ?? []), x.t]);
      continue;
    }
    const starts = open.get(x.h);
    const start = starts?.shift();
    if (start === undefined) throw new Error(`${replica} released ${key(x.h)} at ${x.t} without entering it`);
    out.push({ replica, key: key(x.h), start, end: x.t });
  }
  for (const [h, starts] of open) for (const start of starts) out.push({ replica, key: key(h), start, end: openEnd });
  return out;
}

/**
 * Every pair of intervals of one key from two replicas that share an instant (closed intervals: one
 * ending in the millisecond the other starts counts, the clock cannot order them), as sentences.
 */
export function findOverlaps(intervals: readonly Interval[]): string[] {
  const byKey = new Map<string, Interval[]>();
  for (const x of intervals) byKey.set(x.key, [...(byKey.get(x.key) ?? []), x]);
  const found: string[] = [];
  for (const [key, list] of byKey) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const [a, b] = [list[i]!, list[j]!].sort((x, y) => x.start - y.start) as [Interval, Interval];
        if (a.replica === b.replica || b.start > a.end) continue;
        const until = a.end === Number.POSITIVE_INFINITY ? 'an end it never reported' : String(a.end);
        found.push(
          `${key}: ${b.replica} began reconciling it at ${b.start} while ${a.replica} held it from ${a.start} to ${until}`,
        );
      }
    }
  }
  return found;
}
