/**
 * `fieldValidation` on writes (Ignore, Warn, Strict), for the top level of built-in kinds' bodies.
 *
 * The real decoder knows every field of a built-in kind; this server knows only each kind's
 * top-level fields, so nested unknown fields pass. Custom resources are never checked: their
 * CRD schemas are not consulted (as if every one preserved unknown fields). Unknown fields are
 * kept in the stored object whatever the directive (the real decoder drops them).
 */
import type { ServerResponse } from 'node:http';
import { isRecord } from '../engine/meta.js';
import { ApiServerStatusError } from '../errors.js';
import type { ResourceType } from '../kinds/resource.js';
import { badRequest, invalid, notSupported } from '../status.js';

/** How the server treats unknown fields; unset is `Warn`, as on the real server since 1.27. */
export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

const COMMON = ['apiVersion', 'kind', 'metadata'];

/** The top-level fields of each built-in kind, by `group/Kind` (core group: `/Kind`). */
const TOP_LEVEL: Readonly<Record<string, readonly string[]>> = {
  '/Pod': ['spec', 'status'],
  '/Namespace': ['spec', 'status'],
  '/Service': ['spec', 'status'],
  '/ConfigMap': ['data', 'binaryData', 'immutable'],
  '/Secret': ['data', 'stringData', 'type', 'immutable'],
  '/Event': [
    'involvedObject',
    'reason',
    'message',
    'source',
    'firstTimestamp',
    'lastTimestamp',
    'count',
    'type',
    'eventTime',
    'series',
    'action',
    'related',
    'reportingComponent',
    'reportingInstance',
  ],
  'events.k8s.io/Event': [
    'eventTime',
    'series',
    'reportingController',
    'reportingInstance',
    'action',
    'reason',
    'regarding',
    'related',
    'note',
    'type',
    'deprecatedSource',
    'deprecatedFirstTimestamp',
    'deprecatedLastTimestamp',
    'deprecatedCount',
  ],
  'coordination.k8s.io/Lease': ['spec'],
  'apiextensions.k8s.io/CustomResourceDefinition': ['spec', 'status'],
};

/** The directive a write's query names; any other value is 422 on the verb's options, as the real server answers. */
export function fieldValidationOf(q: URLSearchParams, optionsKind: string): FieldValidation {
  const v = q.get('fieldValidation') ?? '';
  if (v === '') return 'Warn';
  if (v === 'Ignore' || v === 'Warn' || v === 'Strict') return v;
  throw new ApiServerStatusError(
    invalid({ group: 'meta.k8s.io', kind: optionsKind }, '', [
      notSupported('fieldValidation', v, ['', 'Ignore', 'Strict', 'Warn']),
    ]),
  );
}

/** Top-level keys of `body` the kind does not define (patch directives such as `$patch` excepted). */
export function unknownTopLevelFields(r: ResourceType, body: unknown): string[] {
  const known = TOP_LEVEL[`${r.group}/${r.kind}`];
  if (known === undefined || !isRecord(body)) return [];
  return Object.keys(body).filter((k) => !k.startsWith('$') && !COMMON.includes(k) && !known.includes(k));
}

/**
 * Applies the directive to a write's body before the write: Strict refuses unknown fields with
 * 400 (nothing is written), Warn names each in a `Warning` header, Ignore says nothing.
 */
export function checkFields(res: ServerResponse, r: ResourceType, body: unknown, directive: FieldValidation): void {
  if (directive === 'Ignore') return;
  const unknown = unknownTopLevelFields(r, body);
  if (unknown.length === 0) return;
  if (directive === 'Strict') {
    const list = unknown.map((f) => `unknown field ${JSON.stringify(f)}`).join(', ');
    throw new ApiServerStatusError(
      badRequest(
        `${r.kind} in version ${JSON.stringify(r.version)} cannot be handled as a ${r.kind}: strict decoding error: ${list}`,
      ),
    );
  }
  res.setHeader(
    'Warning',
    unknown.map((f) => `299 - ${JSON.stringify(`unknown field ${JSON.stringify(f)}`)}`),
  );
}
