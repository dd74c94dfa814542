import { afterEach, describe, expect, it, vi } from 'vitest';
import { setBaseMetaForTests } from '../../lib/base';
import { handleSessionLost, resetSessionLostForTests } from '../session/session-actions';
import { terminalUrl } from '../terminal/ttyd-codec';

const HTTPS = { protocol: 'https:', host: 'fleet.example' };

afterEach(() => {
  setBaseMetaForTests(null);
  resetSessionLostForTests();
  vi.restoreAllMocks();
});

describe('the console under a fleet path: the features', () => {
  it('opens the terminal socket under the base, and at the root without one', () => {
    expect(terminalUrl('device', HTTPS)).toBe('wss://fleet.example/api/terminal/ws?target=device');
    setBaseMetaForTests('/d/dev1');
    expect(terminalUrl('serial', HTTPS)).toBe(
      'wss://fleet.example/d/dev1/api/terminal/ws?target=serial',
    );
  });

  it('a lost session reloads the device console root; /upgrading is still recognised', () => {
    setBaseMetaForTests('/d/dev1');
    const assign = vi.fn();
    expect(handleSessionLost('/d/dev1/upgrading', assign)).toBe(false);
    expect(assign).not.toHaveBeenCalled();
    const go = vi.spyOn(window.location, 'assign').mockImplementation(() => undefined);
    expect(handleSessionLost('/d/dev1/kvm')).toBe(true);
    expect(go).toHaveBeenCalledWith('/d/dev1/');
  });
});
