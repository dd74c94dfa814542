import { describe, expect, it } from 'vitest';
import { buildConfig } from '../../config';
import { SILENT_LOGGER } from '../../log';
import { LocalClock } from '../clock/local-clock';
import { TimedatectlClock } from '../clock/timedatectl';
import { networkDriver } from '../system/select';
import { nmcliSystemDrivers, NmcliNetwork, NmcliWifi } from './index';

const config = buildConfig(
  { system: { network: 'nmcli' } },
  { dataDir: '/nonexistent/data', webDir: '/nonexistent/web', keymapsDirs: [] },
);

// Construction only: nothing here runs nmcli or touches this machine's clock.
describe('nmcli selection', () => {
  it('system.network: nmcli selects NmcliNetwork', () => {
    expect(networkDriver(config, SILENT_LOGGER, { eager: false })).toBeInstanceOf(NmcliNetwork);
  });

  it('gives a real device its network, Wi-Fi and clock', () => {
    const d = nmcliSystemDrivers(config, SILENT_LOGGER);
    expect(d.network).toBeInstanceOf(NmcliNetwork);
    expect(d.wifi).toBeInstanceOf(NmcliWifi);
    expect(d.clock.kind).toBe('system');
    expect(d.clock instanceof TimedatectlClock || d.clock instanceof LocalClock).toBe(true);
    // not initialised yet: says so rather than pretending
    expect(d.network.availability().available).toBe(false);
  });
});
