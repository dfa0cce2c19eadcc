/**
 * The types of what a watch reader returns: one frame (an object, a bookmark or an in-band error)
 * and the Kubernetes `Status` an `ERROR` frame carries. Types only: the schemas and readers that
 * produce them are in `watch.ts`; the byte readers (`decode/frames.ts`) name them from here.
 */

/** One `details.causes[]` entry of a {@link Status}. `reason` is the wire name of Go's `StatusCause.Type`. */
export interface StatusCause {
  readonly reason?: string | undefined;
  readonly message?: string | undefined;
  readonly field?: string | undefined;
}

/**
 * A Kubernetes `Status` (the payload of an `ERROR` frame, the body of a failed request, the answer
 * to a DELETE): the one Status type of every package. `statusSchema` (`watch.ts`) reads the fields that
 * classify a failure; kube-client also keeps `status` (`Success` / `Failure`) and the `details`
 * naming the object.
 */
export interface Status {
  readonly status?: string | undefined;
  readonly code?: number | undefined;
  readonly reason?: string | undefined;
  readonly message?: string | undefined;
  readonly details?:
    | {
        readonly name?: string | undefined;
        readonly group?: string | undefined;
        readonly kind?: string | undefined;
        readonly uid?: string | undefined;
        readonly causes: readonly StatusCause[];
        /** Seconds the server asks the client to wait before retrying (the header `Retry-After` says the same). */
        readonly retryAfterSeconds?: number | undefined;
      }
    | undefined;
}

/** A frame that carries an object. */
export interface ObjectFrame<T> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly resourceVersion: string;
  readonly object: T;
}

/** A bookmark: the cursor moved, nothing else happened. */
export interface BookmarkFrame {
  readonly type: 'BOOKMARK';
  readonly resourceVersion: string;
}

/** The watch failed in-band. */
export interface ErrorFrame {
  readonly type: 'ERROR';
  readonly status: Status;
}

/** One read watch frame. */
export type WatchFrame<T> = ObjectFrame<T> | BookmarkFrame | ErrorFrame;
