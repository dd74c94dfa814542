/**
 * Where a Wake-on-LAN magic packet leaves the device (docs/drivers.md "Wake-on-LAN"). The packet
 * belongs on the device's own network: on a developer target that is the device's network
 * namespace (drivers/netns/netns-wol.ts), never the network of the computer the server runs on;
 * on a device whose network is this computer's (NetworkManager, a real board) it is a socket of
 * this process. `wol.network: host` asks for the latter explicitly.
 */
import { createSocket } from 'node:dgram';
import { networkInterfaces } from 'node:os';
import { ApiError } from '../../errors';
import { LIMITED_BROADCAST, WolSendError, type WolSender } from './types';

/** The IPv4 address and subnet broadcast of a named interface of this computer. */
export function interfaceBroadcast(name: string): { address: string; broadcast: string } {
  const entry = networkInterfaces()[name]?.find((a) => a.family === 'IPv4');
  if (!entry) throw new WolSendError(`no IPv4 address on interface ${name}`);
  return { address: entry.address, broadcast: subnetBroadcast(entry.address, entry.netmask) };
}

/** `192.168.8.116` in `255.255.255.0` → `192.168.8.255`. */
export function subnetBroadcast(address: string, netmask: string): string {
  const ip = address.split('.').map(Number);
  const mask = netmask.split('.').map(Number);
  return ip.map((b, i) => (b | (~(mask[i] ?? 0) & 0xff)) & 0xff).join('.');
}

/** A socket of this process, on this computer's network (optionally from one interface). */
export class HostWolSender implements WolSender {
  readonly name = 'host';

  constructor(private readonly iface: string | null) {}

  async send(packet: Uint8Array, addressIn: string, port: number): Promise<{ address: string }> {
    let address = addressIn;
    let bindAddress: string | undefined;
    if (this.iface) {
      const nic = interfaceBroadcast(this.iface);
      bindAddress = nic.address;
      if (address === LIMITED_BROADCAST) address = nic.broadcast;
    }
    const socket = createSocket('udp4');
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind({ address: bindAddress, port: 0 }, () => {
          try {
            socket.setBroadcast(true);
          } catch (err) {
            reject(err as Error);
            return;
          }
          socket.send(packet, port, address, (err) => (err ? reject(err) : resolve()));
        });
      });
    } catch (err) {
      throw err instanceof ApiError ? err : new WolSendError((err as Error).message);
    } finally {
      socket.close();
    }
    return { address };
  }
}
