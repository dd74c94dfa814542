/**
 * The input path to the device over WebRTC: the browser opens a data channel "hid" (ordered,
 * reliable) on the peer connection of the video session once the answer is set (the server's
 * offer already holds the data channel m-section, so no renegotiation). Binary HID frames (ops
 * 1-5 of wire-protocol.md 2.8) go through it; without an open channel the caller uses /api/ws.
 */

/** The label the server's HID relay listens to. */
export const INPUT_CHANNEL_LABEL = 'hid';

/** What issue 4's input capture needs from the video session. */
export interface InputChannel {
  readonly isOpen: boolean;
  /** Sends one binary frame; false (nothing sent) when the channel is not open. */
  send(frame: Uint8Array): boolean;
  /** Runs when the channel opens or closes; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
}

/** The parts of RTCDataChannel used here (tests pass a fake). */
export interface DataChannelLike {
  readonly readyState: RTCDataChannelState;
  binaryType: BinaryType;
  send(data: ArrayBuffer): void;
  close(): void;
  onopen: ((event: Event) => void) | null;
  onclose: ((event: Event) => void) | null;
  onerror: ((event: Event) => void) | null;
}

/** An InputChannel over whatever data channel the current peer connection has. */
export class DataChannelInput implements InputChannel {
  private channel: DataChannelLike | null = null;
  private readonly listeners = new Set<() => void>();

  get isOpen(): boolean {
    return this.channel?.readyState === 'open';
  }

  send(frame: Uint8Array): boolean {
    const channel = this.channel;
    if (!channel || channel.readyState !== 'open') return false;
    try {
      // A copy into its own ArrayBuffer: the frame may be a view into a larger buffer.
      channel.send(frame.slice().buffer);
      return true;
    } catch {
      return false; // Closed between the check and the send.
    }
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Takes the channel of a new peer connection (the previous one is dropped). */
  attach(channel: DataChannelLike): void {
    this.detach();
    this.channel = channel;
    channel.binaryType = 'arraybuffer';
    channel.onopen = () => {
      if (this.channel === channel) this.notify();
    };
    channel.onclose = () => {
      if (this.channel === channel) this.notify();
    };
    channel.onerror = () => undefined; // Always followed by close.
    this.notify();
  }

  /** Drops the channel (the peer connection is going away or has gone). */
  detach(): void {
    const channel = this.channel;
    if (!channel) return;
    this.channel = null;
    channel.onopen = null;
    channel.onclose = null;
    channel.onerror = null;
    try {
      channel.close();
    } catch {
      // Already closed with its peer connection.
    }
    this.notify();
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
