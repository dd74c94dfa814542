/**
 * A FAKE fleet for the device's cloud tests (not shipped; the real fleet is `fleet/`, tested
 * end to end by e2e): an https server with a self-signed certificate made in the test, the
 * fleet's bind calls and the agent socket speaking protocol/src/cloud.ts's frames. It records
 * what the device sent, so tests assert on bytes, not on calls.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';
import {
  AGENT_PATH,
  FLEET_API,
  parseAgentControl,
  type AgentControl,
  type BindResult,
  type FleetTurn,
} from '@kvm/protocol';
import { loadOrCreateCertificate } from '../tls';

export const FLEET_USER = { username: 'fleetuser', password: 'secret1', email: 'u@example.com' };
export const FLEET_TURN: FleetTurn = {
  uris: ['turn:127.0.0.1:3478?transport=udp'],
  username: '1700000000:dev',
  password: 'pw',
  ttl: 600,
};

export interface AgentPeer {
  ws: WebSocket;
  headers: IncomingMessage['headers'];
  frames: AgentControl[];
  binary: Buffer[];
  closed: { code: number; reason: string } | null;
}

export class FakeFleet {
  server!: Server;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 4 << 20 });
  port = 0;
  /** How the agent endpoint answers. */
  agentMode: 'ok' | 'revoked' | 'forbidden' = 'ok';
  /** Whether the welcome carries TURN credentials. */
  turn: FleetTurn | null = FLEET_TURN;
  /** The next bind/poll answers the binding. */
  claimed = false;
  readonly calls: Array<{
    path: string;
    body: Record<string, unknown>;
    authorization?: string;
  }> = [];
  readonly agents: AgentPeer[] = [];
  readonly secret = 'S3cr3t-'.padEnd(43, 'x');

  static async start(certDir: string, port = 0): Promise<FakeFleet> {
    const fleet = new FakeFleet();
    await fleet.listen(certDir, port);
    return fleet;
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  binding(): BindResult {
    return {
      device_id: 'dev-0001',
      secret: this.secret,
      account: { username: FLEET_USER.username, email: FLEET_USER.email },
      endpoints: [`wss://127.0.0.1:${this.port}${AGENT_PATH}`],
    };
  }

  /** Listens with the certificate of `certDir` (made there when missing). */
  async listen(certDir: string, port = this.port): Promise<void> {
    const tls = await loadOrCreateCertificate(certDir);
    this.server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => this.http(req, res));
    this.server.on('upgrade', (req: IncomingMessage, socket, head) =>
      this.upgrade(req, socket, head),
    );
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Stops listening and cuts every agent (a fleet restart). */
  async close(): Promise<void> {
    for (const a of this.agents) a.ws.terminate();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The agent connected last, when open. */
  current(): AgentPeer | null {
    const a = this.agents.at(-1);
    return a && a.ws.readyState === WebSocket.OPEN ? a : null;
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private http(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<
          string,
          unknown
        >;
      } catch {
        this.send(res, 400, { ok: false, result: { error: 'BadRequest', error_msg: 'not JSON' } });
        return;
      }
      const path = (req.url ?? '').replace(`${FLEET_API}/`, '');
      this.calls.push({ path, body, authorization: req.headers.authorization });
      switch (path) {
        case 'bind/codes':
          this.send(res, 200, { code: '12345678', expires_in: 60, claim_token: 'claim-token-1' });
          return;
        case 'bind/poll':
          if (body['claim_token'] !== 'claim-token-1') this.send(res, 410, { error: 'gone' });
          else if (this.claimed) this.send(res, 200, { pending: false, ...this.binding() });
          else setTimeout(() => this.send(res, 200, { pending: true }), 50);
          return;
        case 'bind/login':
          if (body['username'] === 'totpuser' && body['totp'] === undefined) {
            this.send(res, 401, {
              ok: false,
              result: {
                error: 'TotpRequiredError',
                error_msg: 'This account asks for a 2FA code',
                totp_required: true,
              },
            });
            return;
          }
          if (
            body['username'] === FLEET_USER.username &&
            body['password'] === FLEET_USER.password
          ) {
            this.send(res, 200, { ok: true, result: this.binding() });
          } else {
            this.send(res, 403, {
              ok: false,
              result: { error: 'Forbidden', error_msg: 'wrong password' },
            });
          }
          return;
        case 'signup/email-code':
        case 'signup':
        case 'device/unbind':
          this.send(res, 200, { ok: true, result: {} });
          return;
        default:
          this.send(res, 404, { ok: false, result: { error: 'NotFound', error_msg: path } });
      }
    });
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (!req.url?.startsWith(AGENT_PATH)) {
      socket.destroy();
      return;
    }
    const auth = req.headers.authorization ?? '';
    if (this.agentMode !== 'ok' || auth !== `Device dev-0001:${this.secret}`) {
      const status = this.agentMode === 'forbidden' ? '403 Forbidden' : '401 Unauthorized';
      const extra = this.agentMode === 'revoked' ? 'X-Kvm-Binding: revoked\r\n' : '';
      socket.end(`HTTP/1.1 ${status}\r\n${extra}Content-Length: 0\r\nConnection: close\r\n\r\n`);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const peer: AgentPeer = { ws, headers: req.headers, frames: [], binary: [], closed: null };
      this.agents.push(peer);
      ws.on('message', (data: Buffer, isBinary) => {
        if (isBinary) {
          peer.binary.push(Buffer.from(data));
          return;
        }
        const frame = parseAgentControl(data.toString('utf8'));
        if (!frame) return;
        peer.frames.push(frame);
        if (frame.t === 'hello') {
          ws.send(
            JSON.stringify({
              t: 'welcome',
              replica: 'replica-a',
              endpoints: [`wss://127.0.0.1:${this.port}${AGENT_PATH}`],
              turn: this.turn,
              ping_ms: 20_000,
            } satisfies AgentControl),
          );
        } else if (frame.t === 'ping') {
          ws.send(JSON.stringify({ t: 'pong', ts: frame.ts } satisfies AgentControl));
        }
      });
      ws.on('close', (code, reason) => {
        peer.closed = { code, reason: reason.toString() };
      });
    });
  }
}
