/**
 * One ttyd socket of a terminal tab, without React or xterm: opens it, sends the handshake,
 * hands output on, and says what the user should see (issue 21 item 18: a shell whose login
 * profile is slow shows "Starting shell…" until its first output, and the server's timeout of a
 * shell that never prints is told apart from other closes).
 */
import { SESSION_ENDED_CLOSE_CODE, type WebSocketLike } from '../../lib/event-socket';
import {
  decodeServer,
  helloFrame,
  terminalUrl,
  TTYD_SUBPROTOCOL,
  type TerminalTarget,
  type TermSize,
} from './ttyd-codec';

export type TerminalStatus =
  /** The socket is not open yet. */
  | 'connecting'
  /** Open, the shell started, and it has printed nothing yet (device shell only). */
  | 'starting'
  | 'open'
  | 'closed'
  | 'sessionEnded'
  /** The server ended a shell that printed nothing for `startTimeoutS` seconds. */
  | 'startTimeout';

/** The server's close reason for that: `start timeout <seconds>` (server terminal-service.ts). */
const START_TIMEOUT_REASON = /^start timeout (\d+)$/;

export type TerminalSocketFactory = (url: string, protocols: string[]) => WebSocketLike;

const browserSocket: TerminalSocketFactory = (url, protocols) => new WebSocket(url, protocols);

export interface TerminalConnectionOptions {
  target: TerminalTarget;
  /** The terminal's size when the handshake is sent. */
  size: () => TermSize;
  onOutput: (data: Uint8Array) => void;
  onStatus: (status: TerminalStatus) => void;
  createSocket?: TerminalSocketFactory;
  url?: string;
}

export class TerminalConnection {
  private ws: WebSocketLike | null;
  private current: TerminalStatus = 'connecting';
  /** With `startTimeout`: the server's bound, in seconds. */
  startTimeoutS: number | null = null;

  constructor(private readonly opts: TerminalConnectionOptions) {
    const ws = (opts.createSocket ?? browserSocket)(opts.url ?? terminalUrl(opts.target), [
      TTYD_SUBPROTOCOL,
    ]);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    ws.onopen = () => {
      ws.send(helloFrame(opts.size()));
      // a serial line may say nothing until a key is pressed: nothing to wait for there
      this.set(opts.target === 'device' ? 'starting' : 'open');
    };
    ws.onmessage = (e: MessageEvent) => {
      const msg = decodeServer(e.data as ArrayBuffer | string);
      if (msg.type !== 'output') return;
      if (this.current === 'starting') this.set('open');
      opts.onOutput(msg.data);
    };
    ws.onclose = (e: CloseEvent) => {
      if (this.ws === ws) this.ws = null;
      const timeout = START_TIMEOUT_REASON.exec(e.reason ?? '');
      if (timeout) {
        this.startTimeoutS = Number(timeout[1]);
        this.set('startTimeout');
      } else this.set(e.code === SESSION_ENDED_CLOSE_CODE ? 'sessionEnded' : 'closed');
    };
  }

  get status(): TerminalStatus {
    return this.current;
  }

  /** A frame for the server (input, resize); dropped while the socket is not open. */
  send(frame: Uint8Array): void {
    if (this.current === 'starting' || this.current === 'open') this.ws?.send(frame);
  }

  /** The tab goes away or reconnects: no status after this. */
  dispose(): void {
    const ws = this.ws;
    this.ws = null;
    if (!ws) return;
    ws.onclose = null;
    ws.onmessage = null;
    ws.onopen = null;
    ws.close();
  }

  private set(status: TerminalStatus): void {
    if (status === this.current) return;
    this.current = status;
    this.opts.onStatus(status);
  }
}
