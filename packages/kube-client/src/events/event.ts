import { OptionsError } from '@reconcile-loop/primitives';
import {} from '../errors.js';

/** A reference to an object, as an Event's `regarding` / `related` (core/v1 `ObjectReference`). */
export interface ObjectReference {
  readonly apiVersion?: string | undefined;
  readonly kind?: string | undefined;
  readonly name: string;
  readonly namespace?: string | undefined;
  readonly uid?: string | undefined;
  readonly resourceVersion?: string | undefined;
  readonly fieldPath?: string | undefined;
}

/** What one recorded event says (client-go's `Eventf(regarding, related, eventtype, reason, action, note)`). */
export interface EventInput {
  readonly type: 'Normal' | 'Warning';
  /** Why the action was taken, UpperCamelCase, e.g. `DeadLettered`. At most 128 characters. */
  readonly reason: string;
  /** What was done (or failed), e.g. `DeletePod`. At most 128 characters. */
  readonly action: string;
  /** Human-readable detail; cut to 1 KiB, the apiserver's limit. */
  readonly note?: string | undefined;
  /** A second object involved, e.g. the pod a CellSet event is about. */
  readonly related?: ObjectReference | undefined;
}

/** The `events.k8s.io/v1` `EventSeries`. */
export interface EventSeries {
  count: number;
  /** RFC 3339 with microseconds. */
  lastObservedTime: string;
}

/** An `events.k8s.io/v1` Event as written. */
export interface EventBody {
  readonly apiVersion: 'events.k8s.io/v1';
  readonly kind: 'Event';
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly eventTime: string;
  readonly reportingController: string;
  readonly reportingInstance: string;
  readonly action: string;
  readonly reason: string;
  readonly type: 'Normal' | 'Warning';
  readonly note: string;
  readonly regarding: ObjectReference;
  readonly related?: ObjectReference | undefined;
  series?: EventSeries | undefined;
}

/** The apiserver's limit on `note` (events.k8s.io validation). */
export const MAX_NOTE_BYTES = 1024;
const MAX_FIELD = 128;

/** A `MicroTime`: RFC 3339 with six fractional digits, as the apiserver writes `eventTime`. */
export function microTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function cutNote(note: string): string {
  if (Buffer.byteLength(note) <= MAX_NOTE_BYTES) return note;
  let cut = note.slice(0, MAX_NOTE_BYTES - 3);
  while (Buffer.byteLength(cut) > MAX_NOTE_BYTES - 3) cut = cut.slice(0, -1);
  return `${cut}...`;
}

/** Throws `OptionsError` for an event the apiserver would refuse (a bug in the caller, not a transient). */
export function checkEvent(regarding: ObjectReference, input: EventInput): void {
  if (typeof regarding?.name !== 'string' || regarding.name === '')
    throw new OptionsError('Event', 'an event needs regarding.name');
  if (input.type !== 'Normal' && input.type !== 'Warning')
    throw new OptionsError('Event', `event type must be Normal or Warning, got ${String(input.type)}`);
  for (const field of ['reason', 'action'] as const) {
    const value = input[field];
    if (typeof value !== 'string' || value === '' || value.length > MAX_FIELD)
      throw new OptionsError('Event', `event ${field} must be 1-${MAX_FIELD} characters, got ${JSON.stringify(value)}`);
  }
}

/**
 * The aggregation key: client-go's (`action`, `reason`, `reportingController`, `regarding`,
 * `related`) plus the note, so two different notes are two Events rather than one series showing
 * only the first.
 */
export function eventKey(regarding: ObjectReference, input: EventInput, reportingController: string): string {
  const ref = (r: ObjectReference | undefined) => (r ? [r.apiVersion, r.kind, r.namespace, r.name, r.uid, r.fieldPath] : null);
  return JSON.stringify([
    ref(regarding),
    ref(input.related),
    input.reason,
    input.action,
    reportingController,
    input.type,
    input.note ?? '',
  ]);
}

let sequence = 0;

/** Builds the Event: named `{regarding.name}.{hex time}` (client-go's scheme), in the regarding object's namespace or `default`. */
export function makeEvent(
  regarding: ObjectReference,
  input: EventInput,
  meta: { reportingController: string; reportingInstance: string; nowMs: number },
): EventBody {
  // Nanoseconds from the wall clock plus a counter, so two events in one millisecond never collide.
  sequence = (sequence + 1) % 1_000_000;
  const suffix = (BigInt(Math.floor(meta.nowMs)) * 1_000_000n + BigInt(sequence)).toString(16);
  const prefix = regarding.name.slice(0, 253 - suffix.length - 1);
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: `${prefix}.${suffix}`, namespace: regarding.namespace || 'default' },
    eventTime: microTime(meta.nowMs),
    reportingController: meta.reportingController,
    reportingInstance: meta.reportingInstance,
    action: input.action,
    reason: input.reason,
    type: input.type,
    note: cutNote(input.note ?? ''),
    regarding: { ...regarding },
    ...(input.related ? { related: { ...input.related } } : {}),
  };
}
