/** The narrated demo runs to the end on the embedded apiserver, each step converged, exit 0. */
import { describe, expect, it } from 'vitest';
import { demo } from '../src/demo.js';

describe('[endpoints: demo] the narrated story converges at every step', () => {
  it('prints one line per converged step and stops with exit 0', async () => {
    const lines: string[] = [];
    expect(await demo((line) => lines.push(line))).toBe(0);
    expect(lines).toHaveLength(8);
    expect(lines[4]).toMatch(/extra learns it left +extra-endpoints = \{\}$/);
    expect(lines.at(-1)).toBe('stopped: exit 0');
  });
});
