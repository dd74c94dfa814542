/**
 * What a Janus plugin is to the gateway's core (core.ts): the core owns sockets, sessions,
 * handles, keepalives, timeouts and transactions; a plugin owns what one handle does with
 * media (`janus.plugin.ustreamer`: watch, offer, answer, the peer connection).
 *
 * Calls per handle, in order (the core queues them, so a plugin never sees two at once):
 *
 *   attach ─► (admit ─► message)* ─► detach
 *                 trickle and hangup may come at any point between attach and detach
 *
 * `admit` and `trickle` are synchronous: a `JanusRequestError` thrown there becomes the
 * request's error reply. `message`, `hangup` and `detach` run in the handle's queue; what
 * they throw is logged, and the client learns about failures only from the events a plugin
 * pushes (`handle.push`).
 */
import type { Jsep } from './protocol';

/** The socket a handle's session belongs to now (a `claim` moves sessions between sockets). */
export interface PluginSocket {
  /** The client's address, for logs. */
  readonly remote: string;
}

/** One handle as a plugin sees it. */
export interface PluginHandle {
  readonly id: number;
  readonly sessionId: number;
  /** `opaque_id` of the attach, when the client sent one. */
  readonly opaqueId: string | null;
  /** An identity for per-socket limits; changes when the session is claimed by another socket. */
  readonly socket: PluginSocket;
  /** Detached (by the client, a destroy, a timeout or the socket closing): push nothing more. */
  readonly detached: boolean;
  /** Plugin messages queued or running on this handle (the running one included). */
  readonly pending: number;
  /** An event for the client; the core adds `session_id` and `sender`. */
  push(event: Record<string, unknown>): void;
}

export interface JanusPlugin {
  /** The wire name janus.js attaches to, e.g. `janus.plugin.ustreamer`. */
  readonly name: string;
  /** This plugin's entry in `server_info.plugins`. */
  readonly info: { readonly name: string; readonly version_string: string };
  /** Peer connections this plugin holds now, offers being built included. */
  readonly peerCount: number;
  attach(handle: PluginHandle): void;
  /** Checks a message before it is queued (the core has checked `body` and `jsep`). */
  admit(handle: PluginHandle, body: Record<string, unknown>, jsep: Jsep | null): void;
  message(handle: PluginHandle, body: Record<string, unknown>, jsep: Jsep | null): Promise<void>;
  /** Candidates of a `trickle` (at most the core's bound; entries unchecked). */
  trickle(handle: PluginHandle, candidates: readonly unknown[]): void;
  /** Janus `hangup`: drop the handle's peer connection, keep the handle. */
  hangup(handle: PluginHandle, reason: string): Promise<void>;
  /** The handle is gone; `notify` when the client asked and still listens. */
  detach(handle: PluginHandle, notify: boolean): Promise<void>;
  /** The gateway shuts down: offers still being built are dropped when they finish. */
  close(): void;
}
