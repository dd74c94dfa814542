import { describe, expect, it } from 'vitest';
import { Lifecycle } from './lifecycle';
import { SILENT_LOGGER } from './log';

describe('Lifecycle', () => {
  it('stops every part once, last registered first, past one that fails', async () => {
    const life = new Lifecycle(SILENT_LOGGER);
    const stopped: string[] = [];
    life.onStop('drivers', async () => {
      await new Promise((r) => setTimeout(r, 5));
      stopped.push('drivers');
    });
    life.onStop('broken', () => {
      throw new Error('boom');
    });
    life.onStop('hid', () => stopped.push('hid'));
    expect(life.order()).toEqual(['hid', 'broken', 'drivers']);
    await Promise.all([life.stop(), life.stop()]);
    expect(stopped).toEqual(['hid', 'drivers']);
    await life.stop();
    expect(stopped).toEqual(['hid', 'drivers']);
    expect(() => life.onStop('late', () => undefined)).toThrow(/while stopping/);
  });
});
