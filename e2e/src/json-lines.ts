import type { Readable } from 'node:stream';

/**
 * Reads a child process's stdout as JSON lines: each whole line that parses goes to `onObject`,
 * any other line to `onOther` (a replica's stray output stays visible, never silently dropped).
 * A partial line waits for its newline.
 */
export function readJsonLines(stream: Readable, onObject: (value: unknown) => void, onOther: (line: string) => void): void {
  let buffer = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        onOther(line);
        continue;
      }
      onObject(value);
    }
  });
}
