import { ReconcileLoopError } from '@reconcile-loop/primitives';
import { describe, expect, it } from 'vitest';
import {
  isLeadershipEnded,
  isLoopStopped,
  isTerminalError,
  LeadershipEndedError,
  LoopStoppedError,
  TerminalError,
} from '../src/index.js';

describe('error guards', () => {
  it('[loop: error guards] match the class (and subclasses), never a look-alike carrying the same code', () => {
    const stopped = new LoopStoppedError('stopped');
    expect(isLoopStopped(stopped)).toBe(true);
    expect(stopped).toBeInstanceOf(ReconcileLoopError);
    expect(stopped).toMatchObject({ code: 'RL_LOOP_STOPPED', name: 'LoopStoppedError' });
    expect(isLoopStopped(Object.assign(new Error('x'), { code: 'RL_LOOP_STOPPED' }))).toBe(false);
    expect(isLoopStopped(new LeadershipEndedError('lost'))).toBe(false);
    expect(isLeadershipEnded(new LeadershipEndedError('lost'))).toBe(true);
    expect(isLeadershipEnded(undefined)).toBe(false);
    // A TerminalError anywhere in the cause chain counts; a look-alike code does not.
    expect(isTerminalError(new Error('wrapped', { cause: new TerminalError('bad spec') }))).toBe(true);
    expect(isTerminalError(Object.assign(new Error('x'), { code: 'RL_LOOP_TERMINAL' }))).toBe(false);
  });
});
