import { describe, expect, it } from 'vitest';
import { checkTransition, IllegalTransitionError, type TransitionMap } from './transitions';

type S = 'idle' | 'open' | 'closed';
const MAP: TransitionMap<S> = { idle: ['open', 'closed'], open: ['closed'], closed: ['idle'] };

describe('checkTransition', () => {
  it('allows the listed moves', () => {
    expect(checkTransition('T', MAP, 'idle', 'open')).toBe(true);
    expect(checkTransition('T', MAP, 'closed', 'idle')).toBe(true);
  });

  it('treats a move to the same state as a no-op', () => {
    expect(checkTransition('T', MAP, 'open', 'open')).toBe(false);
  });

  it('throws on an unlisted move under the tests', () => {
    expect(() => checkTransition('T', MAP, 'open', 'idle')).toThrow(IllegalTransitionError);
    expect(() => checkTransition('T', MAP, 'open', 'idle')).toThrow(
      'T: illegal state transition open -> idle',
    );
  });
});
