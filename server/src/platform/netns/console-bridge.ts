/**
 * The console inside the device's network namespace (issue 27, docs/apps.md "The console
 * through the tunnel"). On the developer targets the server listens on this computer, so
 * nothing in `kvmdev-<h>` (its LAN address, a WireGuard tunnel's address) answered on the
 * console's port, as a real device's would. A small node child started with `ip netns exec
 * <dev> node -e BRIDGE_JS` listens there on port 443 (every address: the LAN's and the
 * tunnel's), with `pauseOnConnect`, and hands each accepted TCP socket to the server over its
 * IPC channel; the server gives it to its running HTTPS server (`server.emit('connection')`).
 * So a connection from the namespace meets the same TLS, sessions, limits (http/edge.ts) and
 * routes as one on the host, with its real remote address.
 *
 * Bounds: at most `maxConnections` bridged sockets are open at once (the next ones are closed
 * at once), and the child closes a connection it cannot hand over within a few seconds or when
 * more than BRIDGE_PENDING_MAX wait. The child runs under the Supervisor (restarted with
 * backoff, `setpriv --pdeathsig`, a pidfile), is started once the namespaces are up and
 * stopped before they are deleted (drivers/network/netns.ts).
 */
import { Socket } from 'node:net';
import { join } from 'node:path';
import type { Logger } from '../../log';
import { Supervisor } from '../../process/supervisor';

/** The device console's port inside its namespace (a real device's HTTPS console). */
export const CONSOLE_PORT = 443;
/** Accepted sockets the child may hold before the server took them. */
export const BRIDGE_PENDING_MAX = 64;
const LISTEN_TIMEOUT_MS = 15_000;

/** Gives an accepted socket to the server that serves the console now (main.ts: the current app). */
export type ConnectionSink = (socket: Socket) => void;

/**
 * argv[1]: port, argv[2]: the most sockets waiting for the parent. Listens on every address
 * (IPv6 and IPv4 when the namespace has IPv6, else IPv4), sends `{type:'listening'}` once, and
 * each connection as `{type:'conn'}` with the socket. Exits when the parent goes.
 */
const BRIDGE_JS = `
const net = require('node:net');
const port = Number(process.argv[1]);
const pendingMax = Number(process.argv[2]);
let pending = 0;
const server = net.createServer({ pauseOnConnect: true }, (socket) => {
  if (pending >= pendingMax) { socket.destroy(); return; }
  pending++;
  const timer = setTimeout(() => socket.destroy(), 5000);
  process.send({ type: 'conn' }, socket, (err) => {
    clearTimeout(timer);
    pending--;
    if (err) socket.destroy();
  });
});
server.on('error', (e) => { process.stderr.write('bridge: ' + (e.code || e.message) + '\\n'); process.exit(1); });
server.listen({ port, backlog: 128 }, () => process.send({ type: 'listening', port }));
process.on('disconnect', () => process.exit(0));`;

export interface ConsoleBridgeOptions {
  /** The device's namespace (`kvmdev-<h>`). */
  namespace: string;
  /** Where its pidfile goes. */
  runDir: string;
  sink: ConnectionSink;
  log: Logger;
  port?: number;
  /** Bridged sockets open at once (the edge's whole-server cap). */
  maxConnections: number;
}

export class ConsoleBridge {
  private readonly sup: Supervisor;
  private readonly open = new Set<Socket>();
  private listening = false;
  private listenWaiters: (() => void)[] = [];
  private refused = 0;

  constructor(private readonly opts: ConsoleBridgeOptions) {
    const port = opts.port ?? CONSOLE_PORT;
    // The server's environment without NODE_OPTIONS (a loader there would slow the child down).
    const env = { ...process.env };
    delete env['NODE_OPTIONS'];
    this.sup = new Supervisor({
      name: `console bridge ${opts.namespace}`,
      command: 'ip',
      // prettier-ignore
      args: [
        'netns', 'exec', opts.namespace, process.execPath, '-e', BRIDGE_JS,
        String(port), String(BRIDGE_PENDING_MAX),
      ],
      env,
      ipc: true,
      pidfile: join(opts.runDir, 'console-bridge.pid'),
      isStale: (argv) => argv.includes(BRIDGE_JS),
      backoff: { initialMs: 500, maxMs: 10_000 },
    });
    this.sup.on('message', (message, handle) => this.onMessage(message, handle));
    this.sup.on('output', (line) => opts.log.debug({ line }, 'console bridge'));
    this.sup.on('exited', (info) => {
      this.listening = false;
      if (!info.expected) {
        opts.log.warn(
          { code: info.code, signal: info.signal },
          'console bridge exited: restarting',
        );
      }
    });
  }

  /** Bridged sockets open now. */
  get connections(): number {
    return this.open.size;
  }

  get pid(): number | null {
    return this.sup.pid;
  }

  /** Starts the child and resolves once it listens (rejects after a timeout). */
  async start(): Promise<void> {
    await this.sup.ensureStarted();
    if (this.listening) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        const said = this.sup.recentOutput().slice(-2).join(' | ');
        reject(new Error(`console bridge: not listening${said ? ` (${said})` : ''}`));
      }, LISTEN_TIMEOUT_MS);
      this.listenWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.opts.log.info(
      { namespace: this.opts.namespace, port: this.opts.port ?? CONSOLE_PORT },
      'console bridge listening in the device namespace',
    );
  }

  /** Stops the child; bridged connections already served go on until they close. */
  async stop(): Promise<void> {
    await this.sup.ensureStopped();
    this.listening = false;
  }

  private onMessage(message: unknown, handle: unknown): void {
    const type = (message as { type?: unknown } | null)?.type;
    if (type === 'listening') {
      this.listening = true;
      const waiters = this.listenWaiters;
      this.listenWaiters = [];
      for (const w of waiters) w();
      return;
    }
    if (type !== 'conn' || !(handle instanceof Socket)) return;
    const socket = handle;
    if (this.open.size >= this.opts.maxConnections) {
      socket.destroy();
      if (this.refused++ % 100 === 0) {
        this.opts.log.warn(
          { cap: this.opts.maxConnections },
          'console bridge: connection refused, at the cap',
        );
      }
      return;
    }
    this.open.add(socket);
    socket.once('close', () => this.open.delete(socket));
    try {
      this.opts.sink(socket);
    } catch (err) {
      this.opts.log.warn(
        { err: (err as Error).message },
        'console bridge: the server refused a socket',
      );
      socket.destroy();
    }
  }
}
