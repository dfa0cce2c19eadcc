import { ReconcileLoopError } from '@reconcile-loop/primitives';

/** Typed errors of this package: each extends `ReconcileLoopError` and has an `RL_TYPES_*` code. */

/** One validation problem, flattened from zod: where it is and what is wrong. */
export interface ValidationIssue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/** A watch frame whose envelope (type, cursor, or `Status`) cannot be read. The reflector logs and skips it. */
export class MalformedWatchFrameError extends ReconcileLoopError {
  readonly code = 'RL_TYPES_WATCH_FRAME_MALFORMED' as const;
  /** The frame's `type` if one could be read. */
  readonly frameType: string | undefined;
  /** The frame's cursor (`object.metadata.resourceVersion`) if one could be read, so a reader can advance past it. */
  readonly resourceVersion: string | undefined;
  readonly issues: readonly ValidationIssue[];

  constructor(
    message: string,
    details: { frameType?: string | undefined; resourceVersion?: string | undefined; issues?: readonly ValidationIssue[] } = {},
  ) {
    super(message);
    this.frameType = details.frameType;
    this.resourceVersion = details.resourceVersion;
    this.issues = details.issues ?? [];
  }
}

/**
 * An object (a LIST item, or the payload of an `ADDED` / `MODIFIED` / `DELETED` frame) that does not
 * validate against its schema (a poison object). It carries what a reader needs to hold the object
 * out of its cache by key and say why: the key, the `resourceVersion` and the issues.
 */
export class InvalidObjectError extends ReconcileLoopError {
  readonly code = 'RL_TYPES_OBJECT_INVALID' as const;
  /** `namespace/name` (or `name`) when the metadata could be read. */
  readonly objectKey: string | undefined;
  /** The object's `metadata.resourceVersion` when it could be read (for a frame, also its cursor). */
  readonly resourceVersion: string | undefined;
  /** The frame type the object arrived in, or `'LIST'`. */
  readonly frameType: string;
  readonly issues: readonly ValidationIssue[];

  constructor(
    message: string,
    details: {
      objectKey?: string | undefined;
      resourceVersion?: string | undefined;
      frameType: string;
      issues: readonly ValidationIssue[];
    },
  ) {
    super(message);
    this.objectKey = details.objectKey;
    this.resourceVersion = details.resourceVersion;
    this.frameType = details.frameType;
    this.issues = details.issues;
  }
}

/** One issue as one line, `spec.replicas: Invalid input: expected number, received string` (`<root>` for the object itself). */
export function describeIssue(issue: ValidationIssue): string {
  const path = issue.path.map(String).join('.');
  return `${path === '' ? '<root>' : path}: ${issue.message}`;
}

/** True when `error` is a {@link MalformedWatchFrameError}, from any copy of this package. */
export function isMalformedWatchFrameError(error: unknown): error is MalformedWatchFrameError {
  return error instanceof MalformedWatchFrameError;
}

/** True when `error` is an {@link InvalidObjectError}, from any copy of this package. */
export function isInvalidObjectError(error: unknown): error is InvalidObjectError {
  return error instanceof InvalidObjectError;
}
