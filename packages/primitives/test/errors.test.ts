import { describe, expect, it, vi } from 'vitest';
import * as here from '../src/index.js';

// A second, separately evaluated copy of the same module graph: what an ESM and a CJS build (or two
// versions of a package) loaded in one process look like to `instanceof`.
vi.resetModules();
const other = await import('../src/index.js');

describe('primitives: error base', () => {
  it('[primitives: error base] a second copy of the module has its own classes', () => {
    expect(other.OptionsError).not.toBe(here.OptionsError);
  });

  it('[primitives: error base] instanceof holds across copies, for the class, its bases and nothing else', () => {
    const theirs = new other.OptionsError('WorkQueue', 'concurrency must be >= 1');
    expect(theirs).toBeInstanceOf(here.OptionsError);
    expect(theirs).toBeInstanceOf(here.ReconcileLoopError);
    expect(theirs).toBeInstanceOf(Error);
    expect(theirs).not.toBeInstanceOf(here.InvalidClockStepError);
    expect(here.isReconcileLoopError(theirs)).toBe(true);
    const step = new other.InvalidClockStepError(-1);
    expect(step).toBeInstanceOf(here.InvalidClockStepError);
    expect(step).not.toBeInstanceOf(here.OptionsError);
  });

  it('[primitives: error base] a plain Error or a look-alike object is not one of ours', () => {
    expect(new Error('x')).not.toBeInstanceOf(here.ReconcileLoopError);
    expect({ code: 'RL_INVALID_OPTIONS', name: 'OptionsError' }).not.toBeInstanceOf(here.OptionsError);
    expect(null).not.toBeInstanceOf(here.ReconcileLoopError);
  });

  it('[primitives: error base] code, name, message and cause', () => {
    const cause = new Error('underlying');
    const error = new here.OptionsError('Reflector', 'pageSize must be > 0', { cause });
    expect(error).toMatchObject({ code: 'RL_INVALID_OPTIONS', name: 'OptionsError', component: 'Reflector' });
    expect(error.message).toBe('Reflector: pageSize must be > 0');
    expect(error.cause).toBe(cause);
    expect('cause' in new here.OptionsError('X', 'y')).toBe(false);
  });
});
