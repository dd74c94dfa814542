/** A WebSocket fake that records what is sent and lets the test play the server. */
import type { WebSocketLike } from '../lib/event-socket';

export class FakeWebSocket implements WebSocketLike {
  static instances: FakeWebSocket[] = [];
  binaryType: BinaryType = 'blob';
  readonly sent: Array<string | ArrayBuffer | ArrayBufferView> = [];
  closed = false;
  onopen: ((event: Event) => void) | null = null;
  onclose: ((event: CloseEvent) => void) | null = null;
  onmessage: ((event: MessageEvent) => void) | null = null;
  onerror: ((event: Event) => void) | null = null;

  constructor(readonly url: string) {
    FakeWebSocket.instances.push(this);
  }

  send(data: string | ArrayBuffer | ArrayBufferView): void {
    this.sent.push(data);
  }

  close(): void {
    this.closed = true;
  }

  /** Server side. */
  open(): void {
    this.onopen?.(new Event('open'));
  }

  receive(data: unknown): void {
    this.onmessage?.({ data } as MessageEvent);
  }

  receiveFrame(event_type: string, event: unknown = {}): void {
    this.receive(JSON.stringify({ event_type, event }));
  }

  serverClose(code = 1006): void {
    this.closed = true;
    this.onclose?.({ code } as CloseEvent);
  }

  sentFrames(): Array<{ event_type: string; event: unknown }> {
    return this.sent
      .filter((d): d is string => typeof d === 'string')
      .map((d) => JSON.parse(d) as { event_type: string; event: unknown });
  }

  static reset(): void {
    FakeWebSocket.instances = [];
  }

  static last(): FakeWebSocket {
    const socket = FakeWebSocket.instances.at(-1);
    if (!socket) throw new Error('no socket created');
    return socket;
  }
}
