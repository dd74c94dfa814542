/**
 * Wake-on-LAN on the developer targets: the magic packet leaves from inside the device's network
 * namespace (`eth0`), to its LAN's broadcast, where the LAN namespace sees it; the network of the
 * computer the server runs on never does. A socket lives in the namespace of the process that
 * makes it, and Node cannot enter another, so a short node process is started in it with
 * `ip netns exec <dev>`: the address, port and packet are its arguments (execFile, no shell).
 */
import { execFile } from 'node:child_process';
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
import { CommandError, type CommandRunner } from '../../platform/netns/runner';

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
/** Sends run one at a time (each starts a process); at most this many wait. */
const MAX_WAITING = 4;

/** execFile without the server's NODE_OPTIONS (a loader there would slow the helper down). */
const nodeRunner: CommandRunner = (file, args, timeoutMs = SEND_TIMEOUT_MS) =>
  new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env['NODE_OPTIONS'];
    execFile(
      file,
      [...args],
      { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024, encoding: 'utf8', env },
      (err, stdout, stderr) => {
        if (!err) resolve({ stdout, stderr });
        else {
          const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
          const why = e.killed ? `timed out after ${timeoutMs} ms` : stderr.trim() || e.message;
          reject(new CommandError(file, args, why.slice(0, 300), e.code ?? null));
        }
      },
    );
  });

export class NetnsWolSender implements WolSender {
  readonly name = 'netns';
  private queue: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  constructor(
    private readonly network: NetnsNetwork,
    private readonly run: CommandRunner = nodeRunner,
  ) {}

  send(packet: Uint8Array, address: string, port: number): Promise<{ address: string }> {
    if (this.waiting >= MAX_WAITING) return Promise.reject(new WolBusyError());
    this.waiting++;
    const next = this.queue.then(() => {
      this.waiting--;
      return this.sendNow(packet, address, port);
    });
    this.queue = next.catch(() => undefined);
    return next;
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
      ], SEND_TIMEOUT_MS);
    } catch (err) {
      throw new WolSendError(err instanceof CommandError ? err.stderr : (err as Error).message);
    }
    return { address };
  }
}
