/**
 * What the netns tests (and the network service's) need around the driver: commands in the
 * LAN namespace, a TCP reachability check from the LAN to the device (no `ping` is installed
 * here: a tiny node server inside the device's namespace, a node client in the LAN's), and
 * name resolution inside the device through its resolv.conf.
 */
import { spawn } from 'node:child_process';
import { CommandError, type CommandResult, runCommand } from '../../process/run';
import { findExecutable } from '../../process/supervisor';
import type { NetnsNames } from './namespaces';

export type Output = CommandResult;

export async function runIn(
  ns: string,
  args: readonly string[],
  timeoutMs = 5000,
): Promise<Output> {
  try {
    return await runCommand('ip', ['netns', 'exec', ns, ...args], { timeoutMs });
  } catch (err) {
    const why = err instanceof CommandError ? err.reason : (err as Error).message;
    throw new Error(`${args.join(' ')} in ${ns}: ${why}`);
  }
}

/** Runs a command in the router's namespace. */
export function runInLan(names: NetnsNames, args: readonly string[]): Promise<Output> {
  return runIn(names.lan, args);
}

/** The namespaces `ip netns list` shows now. */
export async function listNamespaces(): Promise<string[]> {
  const { stdout } = await runCommand('ip', ['netns', 'list']);
  return stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter(Boolean);
}

const SERVER_JS = `
const s = require('node:net').createServer((c) => c.end('kvm-pong\\n'));
s.listen(Number(process.argv[1]), process.argv[2], () => console.log('listening'));
setTimeout(() => process.exit(0), Number(process.argv[3]));`;

const CLIENT_JS = `
const c = require('node:net').connect(Number(process.argv[2]), process.argv[1]);
let got = '';
c.setTimeout(2000, () => { console.log('timeout'); process.exit(2); });
c.on('data', (d) => (got += d));
c.on('end', () => { console.log(got.trim()); process.exit(0); });
c.on('error', (e) => { console.log(e.code); process.exit(1); });`;

/**
 * Whether a TCP connection from the LAN namespace reaches `address:port` in the device's
 * namespace: a listener on `address` in the device, a client in the LAN. Both end by
 * themselves (the server after `lifeMs`) even if the test fails.
 */
export async function reachableFromLan(
  names: NetnsNames,
  address: string,
  port = 18080,
  lifeMs = 5000,
): Promise<boolean> {
  const server = spawn(
    'ip',
    [
      'netns',
      'exec',
      names.dev,
      process.execPath,
      '-e',
      SERVER_JS,
      String(port),
      address,
      String(lifeMs),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  try {
    const listening = await new Promise<boolean>((resolve) => {
      let err = '';
      server.stdout.on('data', (d: Buffer) => {
        if (d.toString().includes('listening')) resolve(true);
      });
      server.stderr.on('data', (d: Buffer) => (err += d.toString()));
      server.on('exit', () => resolve(false));
    });
    if (!listening) return false;
    const { stdout } = await runIn(names.lan, [
      process.execPath,
      '-e',
      CLIENT_JS,
      address,
      String(port),
    ]).catch((e: Error) => ({ stdout: e.message }));
    return stdout.trim() === 'kvm-pong';
  } finally {
    server.kill('SIGKILL');
  }
}

/** What `getent hosts <name>` answers inside the device's namespace (its resolv.conf): the address, or null. */
export async function resolveInDevice(names: NetnsNames, name: string): Promise<string | null> {
  try {
    const { stdout } = await runIn(names.dev, ['getent', 'ahostsv4', name]);
    return stdout.trim().split(/\s+/)[0] || null;
  } catch {
    return null;
  }
}

/** Why tests on real namespaces cannot run here (not root, a tool missing), or null. */
export function namespaceSkipReason(): string | null {
  const missing = ['ip', 'dnsmasq', 'udhcpc'].filter((c) => !findExecutable(c));
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  return missing.length > 0 ? `${missing.join(', ')} missing` : null;
}
