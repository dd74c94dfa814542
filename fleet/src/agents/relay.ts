/**
 * The relay of one replica: the agent sockets it holds, and the way to the others' (the bus).
 * It is the core's DeviceRelay (context.ts) and what the tunnel opens streams through.
 */
import type { Logger } from 'pino';
import { AGENT_PATH, type AgentCommand, type FleetTurn } from '@kvm/protocol';
import type { DeviceRelay, FleetContext } from '../context';
import { turnCredentials } from '../turn';
import { CLOSE, type AgentConnection } from './connection';
import { DeviceOfflineError } from './errors';
import type { OpenedStream, StreamEvents, StreamOpen } from './stream';

/** The other replicas, as the relay uses them (fleet/src/bus/). */
export interface RelayBus {
  /** This replica holds the device's socket now (its connection `connId`). */
  hold(deviceId: string, connId: string): void;
  /** ... no longer. */
  release(deviceId: string): void;
  openRemote(deviceId: string, spec: StreamOpen, events: StreamEvents): Promise<OpenedStream>;
  command(
    deviceId: string,
    name: AgentCommand,
    args: Record<string, unknown> | undefined,
    timeoutMs: number,
  ): Promise<unknown>;
  online(deviceId: string): Promise<boolean>;
  notifyUnbound(deviceId: string): Promise<void>;
  /** Live replicas' public URLs, this one included. */
  replicaUrls(): string[];
  close(): Promise<void>;
}

/** The agent URL of a replica's public https URL. */
export function agentUrlOf(publicUrl: string): string {
  const u = new URL(AGENT_PATH, publicUrl);
  u.protocol = u.protocol === 'http:' ? 'ws:' : 'wss:';
  return u.toString();
}

export class Relay implements DeviceRelay {
  private readonly local = new Map<string, AgentConnection>();
  bus: RelayBus | null = null;
  /** Told of each agent's `hello` on this replica (its version: the jobs record it). */
  readonly helloListeners = new Set<(deviceId: string, version: string) => void>();

  constructor(
    private readonly ctx: FleetContext,
    private readonly log: Logger,
  ) {}

  get replica(): string {
    return this.ctx.config.replica;
  }

  /** The device's socket on this replica, if here. */
  localConnection(deviceId: string): AgentConnection | undefined {
    return this.local.get(deviceId);
  }

  held(): string[] {
    return [...this.local.keys()];
  }

  get localCount(): number {
    return this.local.size;
  }

  /** A new socket of `conn.deviceId`: it replaces the device's previous one, here or elsewhere. */
  attach(conn: AgentConnection): void {
    const old = this.local.get(conn.deviceId);
    this.local.set(conn.deviceId, conn);
    if (old && old !== conn) old.close(CLOSE.replaced, 'replaced');
    this.bus?.hold(conn.deviceId, conn.connId);
  }

  /** `conn` closed: forget it unless a newer socket of the device took its place. */
  detach(conn: AgentConnection): boolean {
    if (this.local.get(conn.deviceId) !== conn) return false;
    this.local.delete(conn.deviceId);
    this.bus?.release(conn.deviceId);
    return true;
  }

  /**
   * Another replica got the device's socket at `at`: drop ours unless it is newer (the device
   * hopped back here before the news came).
   */
  replacedElsewhere(deviceId: string, connId: string, at: number): void {
    const conn = this.local.get(deviceId);
    if (!conn || conn.connId === connId || conn.connectedAt > at) return;
    conn.close(CLOSE.replaced, 'replaced');
  }

  async openStream(
    deviceId: string,
    spec: StreamOpen,
    events: StreamEvents,
  ): Promise<OpenedStream> {
    const conn = this.local.get(deviceId);
    if (conn && conn.state === 'ready') return conn.open(spec, events);
    if (this.bus) return this.bus.openRemote(deviceId, spec, events);
    throw new DeviceOfflineError();
  }

  async command(
    deviceId: string,
    name: AgentCommand,
    args?: Record<string, unknown>,
    timeoutMs = 10_000,
  ): Promise<unknown> {
    const conn = this.local.get(deviceId);
    if (conn && conn.state === 'ready') return conn.command(name, args, timeoutMs);
    if (this.bus) return this.bus.command(deviceId, name, args, timeoutMs);
    throw new DeviceOfflineError();
  }

  async online(deviceId: string): Promise<boolean> {
    if (this.local.get(deviceId)?.state === 'ready') return true;
    return this.bus ? this.bus.online(deviceId) : false;
  }

  async notifyUnbound(deviceId: string): Promise<void> {
    const conn = this.local.get(deviceId);
    if (conn) {
      conn.notifyUnbound();
      return;
    }
    await this.bus?.notifyUnbound(deviceId);
  }

  turnFor(name: string): FleetTurn | null {
    return turnCredentials(this.ctx.config.turn, name);
  }

  /** Every live replica's agent URL, this one first (the `welcome`'s endpoints). */
  endpoints(): string[] {
    const own = agentUrlOf(this.ctx.config.publicUrl);
    const others = (this.bus?.replicaUrls() ?? []).map(agentUrlOf).filter((u) => u !== own);
    return [own, ...others.sort()];
  }

  /** Stops: every socket is told the replica goes away (its agent reconnects elsewhere). */
  async close(): Promise<void> {
    const conns = [...this.local.values()];
    for (const c of conns) c.close(CLOSE.goingAway, 'replica stopping');
    await Promise.all(
      conns.map((c) => Promise.race([c.whenClosed(), new Promise((r) => setTimeout(r, 1500))])),
    );
    await this.bus?.close();
    this.log.debug({ replica: this.replica }, 'relay closed');
  }
}
