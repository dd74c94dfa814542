/**
 * What the nmcli Ethernet and Wi-Fi drivers share about NetworkManager's devices: which ones it
 * manages, why it cannot be used when listing them fails, and the error of a failed step.
 */
import { InternalError } from '../../errors';
import { CommandError, type CommandRunner } from '../../process/run';
import { failureText, said } from './command';
import { parseTable } from './terse';

/** An nmcli step failed (the device's fault, not the request's); the message names the step. */
export class NmcliError extends InternalError {}

/** Why nmcli cannot be used here, from how listing devices failed. */
export function unavailableReason(err: unknown): string {
  if (err instanceof CommandError) {
    if (err.code === 'ENOENT') return 'NetworkManager (nmcli) is not installed';
    if (/not running/i.test(said(err))) return 'NetworkManager is not running';
    return `NetworkManager does not answer: ${failureText(err)}`;
  }
  return `NetworkManager does not answer: ${String(err)}`;
}

/** `nmcli -t -f DEVICE,TYPE,STATE device` → managed devices of `type` (`ethernet`, `wifi`). */
export async function findDevices(run: CommandRunner, type: string): Promise<string[]> {
  const { stdout } = await run('nmcli', ['-t', '-f', 'DEVICE,TYPE,STATE', 'device']);
  return parseTable(stdout, 3)
    .filter(([, t, state]) => t === type && !/^unmanaged/.test(state ?? ''))
    .map(([dev]) => dev ?? '')
    .filter((d) => d !== '');
}
