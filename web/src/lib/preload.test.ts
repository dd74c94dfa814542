import { describe, expect, it, vi } from 'vitest';
import { preload, registerPreload } from './preload';

describe('preload', () => {
  it('loads a registered name at once, each time it is asked for', () => {
    const loader = vi.fn(async () => undefined);
    registerPreload('registered-first', loader);
    preload('registered-first');
    preload('registered-first');
    expect(loader).toHaveBeenCalledTimes(2);
  });

  it('a name asked for before it is registered loads once, at its registration', () => {
    const loader = vi.fn(async () => undefined);
    preload('asked-first');
    preload('asked-first');
    expect(loader).not.toHaveBeenCalled();
    registerPreload('asked-first', loader);
    expect(loader).toHaveBeenCalledTimes(1);
    // registered again (a hot reload): nothing is pending any more
    registerPreload('asked-first', loader);
    expect(loader).toHaveBeenCalledTimes(1);
  });

  it('a loader that fails is ignored (navigation loads the chunk again)', async () => {
    const loader = vi.fn(() => Promise.reject(new Error('offline')));
    registerPreload('failing', loader);
    expect(() => preload('failing')).not.toThrow();
    await Promise.resolve();
    expect(loader).toHaveBeenCalledTimes(1);
  });
});
