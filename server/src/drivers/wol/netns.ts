/**
 * Wake-on-LAN on the developer targets: the magic packet leaves from inside the device's network
 * namespace (`eth0`), to its LAN's broadcast, where the LAN namespace sees it; the network of the
 * computer the server runs on never does. A socket lives in the namespace of the process that
 * makes it, and Node cannot enter another, so a short node process is started in it with
 * `ip netns exec <dev>`: the address, port and packet are its arguments (execFile, no shell).
 */
import { SystemFeatureUnavailableError } from '../types';
import { subnetBroadcast } from './host';
import {
  LIMITED_BROADCAST,
  WolBusyError,
  WolSendError,
  WolUnavailableError,
  type WolSender,
} from './types';
import type { NetnsNetwork } from '../network/netns';
import { isIpv4 } from '@kvm/protocol';
import { CommandError, type CommandRunner, runCommand } from '../../process/run';
import { SerialQueue } from '../../sync/serial-queue';

/** Sends argv[3] (hex) to argv[1]:argv[2] with broadcasting allowed; says why on stderr. */
const SEND_JS = `
const [address, port, hex] = process.argv.slice(1);
const s = require('node:dgram').createSocket('udp4');
const fail = (e) => { process.stderr.write(String(e.code || e.message)); process.exit(1); };
s.on('error', fail);
s.bind(0, () => {
  s.setBroadcast(true);
  s.send(Buffer.from(hex, 'hex'), Number(port), address, (e) => (e ? fail(e) : s.close()));
});`;

/** A node start on a loaded machine takes seconds, not minutes. */
const SEND_TIMEOUT_MS = 15_000;
/** Sends run one at a time (each starts a process): the running one and three waiting. */
const MAX_WAITING = 3;

/** The server's environment without its NODE_OPTIONS (a loader there would slow the helper down). */
function helperEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env['NODE_OPTIONS'];
  return env;
}

export class NetnsWolSender implements WolSender {
  readonly name = 'netns';
  private readonly queue = new SerialQueue({
    max: MAX_WAITING,
    busyError: () => new WolBusyError(),
  });

  constructor(
    private readonly network: NetnsNetwork,
    private readonly run: CommandRunner = runCommand,
  ) {}

  send(packet: Uint8Array, address: string, port: number): Promise<{ address: string }> {
    return this.queue.run(() => this.sendNow(packet, address, port));
  }

  private async sendNow(
    packet: Uint8Array,
    addressIn: string,
    port: number,
  ): Promise<{ address: string }> {
    const availability = this.network.availability();
    if (!availability.available) {
      throw new WolUnavailableError(
        `Wake-on-LAN goes out on the device's network namespace: ${availability.reason ?? 'not available'}`,
      );
    }
    let address = addressIn;
    try {
      // starts the namespaces if they are not up yet (testbed: at first use)
      const status = await this.network.status();
      if (address === LIMITED_BROADCAST) {
        if (!status.ip_address || !status.netmask) {
          throw new WolSendError(`the device's network has no IPv4 address yet`);
        }
        address = subnetBroadcast(status.ip_address, status.netmask);
      }
    } catch (err) {
      if (err instanceof WolSendError) throw err;
      if (err instanceof SystemFeatureUnavailableError) throw new WolUnavailableError(err.message);
      throw new WolSendError(`the device's network: ${(err as Error).message}`);
    }
    if (!isIpv4(address)) throw new WolSendError(`not an IPv4 address: ${address}`);
    try {
      // prettier-ignore
      await this.run('ip', [
        'netns', 'exec', this.network.names.dev, process.execPath, '-e', SEND_JS,
        address, String(port), Buffer.from(packet).toString('hex'),
      ], { timeoutMs: SEND_TIMEOUT_MS, maxBuffer: 64 * 1024, env: helperEnv() });
    } catch (err) {
      const why = err instanceof CommandError ? err.reason.slice(0, 300) : (err as Error).message;
      throw new WolSendError(why);
    }
    return { address };
  }
}
