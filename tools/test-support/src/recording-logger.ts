import type { Logger } from '@reconcile-loop/primitives';

/** One call a {@link recordingLogger} received. */
export interface LogEntry {
  readonly level: keyof Logger;
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

/** A logger that records every call, in order, in `entries`. */
export function recordingLogger(): Logger & { readonly entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at =
    (level: keyof Logger) =>
    (fields: Record<string, unknown>, message: string): void => {
      entries.push({ level, fields, message });
    };
  return { entries, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
