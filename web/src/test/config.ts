/** The console's config store in tests: ready with chosen settings, and the device's echo of a write. */
import { USER_CONFIG_DEFAULTS, type UserConfig } from '@kvm/protocol/settings';
import { useConfig } from '../features/config/config-store';
import { envelope, type Responder } from './fetch-stub';

/** The config store ready with the defaults and `patch`, as after the console's first read. */
export function setConfig(patch: Partial<UserConfig>): void {
  useConfig.setState({ config: { ...USER_CONFIG_DEFAULTS, ...patch }, status: 'ready' });
}

/** A `/api/system/set_config` stub answering with the config it was sent, as the device does. */
export const echoSetConfig: Responder = (req) =>
  envelope(200, { config: JSON.parse(req.body ?? '{}') as unknown });
