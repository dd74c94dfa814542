/**
 * Wake-on-LAN: the device list kept in `<data_dir>/wol.json` and the magic packet, a UDP
 * datagram (port 9 by default) handed to the target's WolSender: from inside the device's
 * network namespace on the developer targets, from this computer on a device whose network it is
 * (drivers/wol/select.ts).
 */
import { join } from 'node:path';
import {
  WOL_DEVICES_MAX,
  magicPacket,
  normalizeMac,
  normalizeWolName,
  type WolDevice,
} from '@kvm/protocol';
import { ApiError, BadRequestError, NotFoundError, ValidatorError } from '../../errors';
import { WolSendError, type WolSender } from '../../drivers/wol/types';
import { JsonFile } from '../../storage/json-store';
import { SerialQueue } from '../../sync/serial-queue';

export { WolSendError, WolUnavailableError } from '../../drivers/wol/types';

export interface WolConfig {
  /** Where the packet goes: the broadcast of the network it leaves on by default. */
  address: string;
  port: number;
}

export class WolDeviceExistsError extends BadRequestError {
  constructor(mac: string) {
    super(`A device with the MAC address ${mac} already exists`);
  }
}

export class WolSameNameError extends BadRequestError {}

export class WolDeviceNotFoundError extends NotFoundError {}

/**
 * The stored list, held to the rules of `add`: a hand-edited or older file loses entries that
 * break them (bad MAC or name, a repeated MAC, past WOL_DEVICES_MAX) instead of serving them.
 */
function parseDevices(raw: unknown): { devices: WolDevice[] } {
  const list = (raw as { devices?: unknown } | undefined)?.devices;
  if (!Array.isArray(list)) return { devices: [] };
  const devices: WolDevice[] = [];
  const seen = new Set<string>();
  for (const d of list as Array<{ name?: unknown; mac?: unknown } | null>) {
    if (devices.length >= WOL_DEVICES_MAX) break;
    const mac = typeof d?.mac === 'string' ? normalizeMac(d.mac) : null;
    const name = typeof d?.name === 'string' ? normalizeWolName(d.name) : null;
    if (!mac || !name || seen.has(mac)) continue;
    seen.add(mac);
    devices.push({ name, mac });
  }
  return { devices };
}

export class WolService {
  private devices: WolDevice[] = [];
  /** One change at a time: two adds of the same MAC never both pass the check. */
  private readonly changes = new SerialQueue();

  private constructor(
    private readonly file: JsonFile<{ devices: WolDevice[] }>,
    private readonly config: WolConfig,
    private readonly sender: WolSender,
  ) {}

  static async open(dataDir: string, config: WolConfig, sender: WolSender): Promise<WolService> {
    const file = new JsonFile(join(dataDir, 'wol.json'), parseDevices);
    const service = new WolService(file, config, sender);
    service.devices = (await file.load()).devices;
    return service;
  }

  list(): WolDevice[] {
    return this.devices.map((d) => ({ ...d }));
  }

  /** `name` and `mac` as the route checked them (trimmed; normalizeMac's form). */
  add(name: string, mac: string): Promise<WolDevice> {
    return this.changes.run(async () => {
      if (this.devices.some((d) => d.mac === mac)) throw new WolDeviceExistsError(mac);
      if (this.devices.length >= WOL_DEVICES_MAX) {
        throw new ValidatorError(`At most ${WOL_DEVICES_MAX} devices`);
      }
      const device = { name, mac };
      await this.save([...this.devices, device]);
      return { ...device };
    });
  }

  rename(mac: string, name: string): Promise<WolDevice> {
    return this.changes.run(async () => {
      const device = this.find(mac);
      // SPEC 5: a new name must differ from the old one.
      if (device.name === name) {
        throw new WolSameNameError('The new name is the same as the old one');
      }
      await this.save(this.devices.map((d) => (d.mac === mac ? { ...d, name } : d)));
      return { name, mac };
    });
  }

  remove(mac: string): Promise<void> {
    return this.changes.run(async () => {
      this.find(mac);
      await this.save(this.devices.filter((d) => d.mac !== mac));
    });
  }

  /** Sends the magic packet for a known device (or any valid MAC, in normalizeMac's form). */
  async wake(mac: string): Promise<{ mac: string; address: string; port: number }> {
    const { port } = this.config;
    try {
      const { address } = await this.sender.send(magicPacket(mac), this.config.address, port);
      return { mac, address, port };
    } catch (err) {
      throw err instanceof ApiError ? err : new WolSendError((err as Error).message);
    }
  }

  private find(mac: string): WolDevice {
    const device = this.devices.find((d) => d.mac === mac);
    if (!device) {
      throw new WolDeviceNotFoundError(`No device with the MAC address ${mac}`);
    }
    return device;
  }

  private async save(next: WolDevice[]): Promise<void> {
    await this.file.save({ devices: next });
    this.devices = next;
  }
}
