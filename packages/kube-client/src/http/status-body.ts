import type { Status, StatusCause } from '@reconcile-loop/k8s-types';

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads a `Status` out of a decoded value; `undefined` when it is not one (a proxy's HTML page, a bare object). */
export function toStatus(value: unknown): Status | undefined {
  if (!isRecord(value)) return undefined;
  if (value['kind'] !== undefined && value['kind'] !== 'Status') return undefined;
  const details = isRecord(value['details']) ? value['details'] : undefined;
  const causes: StatusCause[] = Array.isArray(details?.['causes'])
    ? (details['causes'] as unknown[])
        .filter(isRecord)
        .map((cause) => ({ reason: str(cause['reason']), message: str(cause['message']), field: str(cause['field']) }))
    : [];
  const retry = details?.['retryAfterSeconds'];
  return {
    status: str(value['status']),
    code: typeof value['code'] === 'number' ? value['code'] : undefined,
    reason: str(value['reason']),
    message: str(value['message']),
    details:
      details === undefined
        ? undefined
        : {
            name: str(details['name']),
            group: str(details['group']),
            kind: str(details['kind']),
            uid: str(details['uid']),
            causes,
            retryAfterSeconds: typeof retry === 'number' ? retry : undefined,
          },
  };
}

/** Reads a `Status` out of a response body's text. */
export function readStatus(text: string): Status | undefined {
  try {
    return toStatus(JSON.parse(text));
  } catch {
    return undefined;
  }
}
