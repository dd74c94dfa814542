/** `/api/info` and its `info` event (wire-protocol.md 1.3, 2.3). */
import { machine, release, type, version } from 'node:os';
import { INFO_FIELDS, type InfoResult } from '@kvm/protocol';
import type { AppConfig } from '../config';
import type { StateProvider } from '../ws/state-registry';

export interface InfoDeps {
  config: AppConfig;
  /** The product's firmware version (root package.json). */
  version: string;
  /** Host name reported in meta. */
  host: string;
}

export class InfoService {
  constructor(private readonly deps: InfoDeps) {}

  build(): InfoResult {
    return {
      system: {
        kvmd: { version: '4.82' },
        product: {
          name: 'KVM console',
          version: this.deps.version,
          model: this.deps.config.device.model,
          target: this.deps.config.target,
        },
        kernel: { system: type(), release: release(), version: version(), machine: machine() },
        platform: {
          type: this.deps.config.target,
          base: this.deps.config.target === 'qemu' ? 'QEMU virtual machine' : 'Test bed',
          model: this.deps.config.device.model,
          serial: '',
        },
        streamer: { app: 'kvm-server', version: this.deps.version, features: {} },
      },
      auth: { enabled: true },
      meta: { kvm: {}, server: { host: this.deps.host } },
      extras: {},
    };
  }

  /** kvmd sends `info` one field per frame. Static for now; later subsystems extend extras. */
  provider(): StateProvider {
    return {
      name: 'info',
      snapshot: () => {
        const info = this.build();
        return INFO_FIELDS.map((f) => ({ event_type: 'info', event: { [f]: info[f] } }));
      },
      subscribe: () => () => undefined,
    };
  }
}
