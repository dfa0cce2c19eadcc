/**
 * Manifest files for the bin (`--crd`, `--seed`): JSON only — a single object, an array, or a
 * `List` with `items`. YAML is refused with a hint: a YAML parser would be this package's only
 * third-party runtime dependency (see README, Decisions).
 */
import { ReconcileLoopError } from '@reconcile-loop/primitives';
import { readFile } from 'node:fs/promises';
import { isRecord } from './engine/meta.js';
import type { ApiServerObject } from './types.js';

/** A command-line mistake or a manifest file the bin cannot use; the bin exits with status 2. */
export class UsageError extends ReconcileLoopError {
  readonly code = 'RL_APISERVER_USAGE' as const;
}

/** The objects in a JSON manifest file. */
export async function readManifests(flag: string, path: string): Promise<ApiServerObject[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new UsageError(`${flag} ${path}: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new UsageError(
      `${flag} ${path}: not JSON (${(e as Error).message}). This server reads JSON manifests only; convert YAML with \`kubectl create --dry-run=client -o json -f ${path}\` or \`yq -o json\``,
    );
  }
  const items = Array.isArray(doc)
    ? doc
    : isRecord(doc) && Array.isArray(doc['items']) && String(doc['kind'] ?? '').endsWith('List')
      ? doc['items']
      : [doc];
  return items.map((o: unknown, i) => {
    if (!isRecord(o) || typeof o['apiVersion'] !== 'string' || typeof o['kind'] !== 'string' || !isRecord(o['metadata'])) {
      throw new UsageError(`${flag} ${path}: item ${i} is not an object with apiVersion, kind and metadata`);
    }
    return o as ApiServerObject;
  });
}
