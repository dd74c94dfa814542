/**
 * A small RFB 3.8 client (RFC 6143) for QEMU's VNC server on a unix socket: no
 * authentication, 32 bpp little-endian true colour (so the framebuffer is `bgr0` in memory),
 * Hextile (hextile.ts) and Raw encodings plus the DesktopSize (-223) and ExtendedDesktopSize (-308)
 * pseudo-encodings so guest mode changes are followed. It keeps the framebuffer; the owner asks
 * for updates.
 *
 * Handshake:
 *   S: "RFB 003.008\n"          C: "RFB 003.008\n"
 *   S: u8 n, u8 types[n]        C: u8 1 (None)
 *   S: u32 result (0 = ok; else u32 len + reason)
 *   C: u8 shared=1              S: u16 w, u16 h, pixel format[16], u32 len, name
 * Server messages: 0 FramebufferUpdate (u8 pad, u16 n, n x {u16 x,y,w,h, s32 encoding, data}),
 * 1 SetColourMapEntries, 2 Bell, 3 ServerCutText.
 */
import { EventEmitter } from 'node:events';
import { createConnection, type Socket } from 'node:net';
import { HextileDecoder } from './hextile';
import { openWithin } from './open-within';

const ENC_RAW = 0;
const ENC_HEXTILE = 5;
const ENC_DESKTOP_SIZE = -223;
const ENC_EXTENDED_DESKTOP_SIZE = -308;
/** QEMU's keyboard LED state pseudo-encoding: one byte, bit0 scroll, bit1 num, bit2 caps. */
const ENC_QEMU_LED_STATE = -261;

/** 32 bpp, depth 24, little-endian, true colour, 8 bits each: red<<16|green<<8|blue = B,G,R,X. */
const PIXEL_FORMAT = Buffer.from([32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]);

export interface RfbClientEvents {
  /** A FramebufferUpdate was applied; `arrivedAt` is performance.now() of its first bytes. */
  update: [arrivedAt: number];
  /** The framebuffer changed size (before the update that repaints it). */
  resize: [width: number, height: number];
  /** The guest's keyboard LEDs (QEMU sends them on connect and on every change). */
  leds: [leds: { caps: boolean; num: boolean; scroll: boolean }];
  close: [error: Error | null];
}

/** Bytes received but not yet parsed, as a list of chunks (no copy until a read spans two). */
class ByteQueue {
  private chunks: Buffer[] = [];
  length = 0;

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  peekU8(offset: number): number {
    for (const c of this.chunks) {
      if (offset < c.length) return c[offset] as number;
      offset -= c.length;
    }
    throw new RangeError('peek past the end');
  }

  /** Everything queued, as one buffer (the queue is then empty). */
  takeAll(): Buffer {
    const out = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
    this.chunks = [];
    this.length = 0;
    return out;
  }

  /** Puts bytes back at the front (what a parser took and did not use). */
  unshift(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.unshift(chunk);
    this.length += chunk.length;
  }

  read(n: number): Buffer {
    const first = this.chunks[0];
    if (first && first.length >= n) {
      const out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.length -= n;
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const c = this.chunks[0] as Buffer;
      const take = Math.min(c.length, n - filled);
      c.copy(out, filled, 0, take);
      filled += take;
      if (take === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(take);
    }
    this.length -= n;
    return out;
  }
}

type Phase = 'version' | 'security' | 'security-result' | 'init' | 'normal' | 'closed';

export class RfbClient extends EventEmitter<RfbClientEvents> {
  width = 0;
  height = 0;
  name = '';
  /** The picture, `width * height * 4` bytes of B,G,R,X. */
  framebuffer: Buffer = Buffer.alloc(0);
  /** The same memory as pixels (little-endian hosts: one u32 is one B,G,R,X pixel). */
  private pixels: Uint32Array<ArrayBufferLike> = new Uint32Array(0);
  private readonly hextile = new HextileDecoder();

  private readonly queue = new ByteQueue();
  private phase: Phase = 'version';
  private ready: { resolve: () => void; reject: (e: Error) => void } | null = null;
  /** Rectangles left in the FramebufferUpdate being parsed, or -1 between messages. */
  private rectsLeft = -1;
  private updateArrivedAt = 0;
  private chunkArrivedAt = 0;
  private resized = false;

  private constructor(private readonly socket: Socket) {
    super();
    socket.on('data', (chunk: Buffer) => {
      this.chunkArrivedAt = performance.now();
      this.queue.push(chunk);
      try {
        this.parse();
      } catch (err) {
        this.fail(err as Error);
      }
    });
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(null));
  }

  /** Connects and completes the handshake (pixel format and encodings set). */
  static async connect(path: string, timeoutMs = 5000): Promise<RfbClient> {
    const client = new RfbClient(createConnection(path));
    const ready = new Promise<void>((resolve, reject) => {
      client.ready = { resolve, reject };
    });
    return openWithin(client, ready, {
      timeoutMs,
      timeoutError: () => new Error(`RFB handshake over ${timeoutMs} ms`),
    });
  }

  get isClosed(): boolean {
    return this.phase === 'closed';
  }

  /**
   * Asks for an update of the whole screen: `incremental` ones are answered only when
   * something changed (QEMU holds the request until then).
   */
  requestUpdate(incremental: boolean): void {
    if (this.phase !== 'normal') return;
    const msg = Buffer.alloc(10);
    msg[0] = 3;
    // After a resize the whole new picture is needed, whatever the caller thinks it has.
    msg[1] = incremental && !this.resized ? 1 : 0;
    this.resized = false;
    msg.writeUInt16BE(0, 2);
    msg.writeUInt16BE(0, 4);
    msg.writeUInt16BE(this.width, 6);
    msg.writeUInt16BE(this.height, 8);
    this.socket.write(msg);
  }

  /**
   * Tells QEMU's VNC server to look at the screen again soon. QEMU checks the guest's screen
   * every 30 ms while it changes and 50 ms later after each check that found nothing, up to
   * 3 s apart (ui/vnc.c, VNC_REFRESH_INTERVAL_BASE/INC/MAX); the first change after a still
   * screen then waits up to 3 s. Any client message of type above 3 puts the interval back to
   * 30 ms. Input reaches the guest through QMP, not VNC, so it never resets it by itself: we
   * send an empty ClientCutText (type 6), which sets QEMU's clipboard to nothing (there is no
   * clipboard agent in the guest to hand it to) and has no other effect.
   */
  wakeRefresh(): void {
    if (this.phase !== 'normal') return;
    // type 6, 3 bytes padding, u32 length 0
    this.socket.write(Buffer.from([6, 0, 0, 0, 0, 0, 0, 0]));
  }

  close(): void {
    this.socket.destroy();
    this.fail(null);
  }

  private fail(err: Error | null): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    this.socket.destroy();
    this.ready?.reject(err ?? new Error('RFB connection closed during the handshake'));
    this.ready = null;
    this.emit('close', err);
  }

  private resize(width: number, height: number): void {
    this.width = width;
    this.height = height;
    this.framebuffer = Buffer.alloc(width * height * 4);
    this.pixels = new Uint32Array(
      this.framebuffer.buffer,
      this.framebuffer.byteOffset,
      width * height,
    );
    this.resized = true;
    this.emit('resize', width, height);
  }

  private parse(): void {
    for (;;) {
      if (!this.step()) return;
    }
  }

  /** Parses one unit if enough bytes are queued; false to wait for more. */
  private step(): boolean {
    const q = this.queue;
    switch (this.phase) {
      case 'version': {
        if (q.length < 12) return false;
        const version = q.read(12).toString('latin1');
        if (!/^RFB 003\.00[3-8]\n$/.test(version) || version < 'RFB 003.008') {
          throw new Error(`unsupported RFB server ${JSON.stringify(version)}`);
        }
        this.socket.write('RFB 003.008\n');
        this.phase = 'security';
        return true;
      }
      case 'security': {
        if (q.length < 1) return false;
        const n = q.peekU8(0);
        if (n === 0) return this.readReason('server refused the connection');
        if (q.length < 1 + n) return false;
        const types = [...q.read(1 + n).subarray(1)];
        if (!types.includes(1)) {
          throw new Error(`VNC server wants authentication (types ${types.join(',')})`);
        }
        this.socket.write(Buffer.from([1]));
        this.phase = 'security-result';
        return true;
      }
      case 'security-result': {
        if (q.length < 4) return false;
        const head = q.read(4);
        if (head.readUInt32BE(0) !== 0) return this.readReason('security handshake failed');
        this.socket.write(Buffer.from([1])); // ClientInit: shared
        this.phase = 'init';
        return true;
      }
      case 'init': {
        if (q.length < 24) return false;
        const nameLength =
          ((q.peekU8(20) << 24) | (q.peekU8(21) << 16) | (q.peekU8(22) << 8) | q.peekU8(23)) >>> 0;
        if (q.length < 24 + nameLength) return false;
        const init = q.read(24 + nameLength);
        this.name = init.toString('utf8', 24);
        this.resize(init.readUInt16BE(0), init.readUInt16BE(2));
        const setPixelFormat = Buffer.concat([Buffer.alloc(4), PIXEL_FORMAT]);
        const encodings = [
          ENC_HEXTILE,
          ENC_RAW,
          ENC_DESKTOP_SIZE,
          ENC_EXTENDED_DESKTOP_SIZE,
          ENC_QEMU_LED_STATE,
        ];
        const setEncodings = Buffer.alloc(4 + 4 * encodings.length);
        setEncodings[0] = 2;
        setEncodings.writeUInt16BE(encodings.length, 2);
        encodings.forEach((e, i) => setEncodings.writeInt32BE(e, 4 + 4 * i));
        this.socket.write(Buffer.concat([setPixelFormat, setEncodings]));
        this.phase = 'normal';
        this.ready?.resolve();
        this.ready = null;
        return true;
      }
      case 'normal':
        if (this.body === 'raw') return this.readRawBody();
        if (this.body === 'hextile') return this.readHextileBody();
        if (this.body === 'extended') return this.readExtendedBody();
        if (this.body === 'leds') return this.readLedBody();
        return this.rectsLeft >= 0 ? this.readRect() : this.readMessage();
      case 'closed':
        return false;
    }
  }

  private readReason(what: string): boolean {
    const q = this.queue;
    const start = this.phase === 'security' ? 1 : 0;
    if (q.length < start + 4) return false;
    const len =
      ((q.peekU8(start) << 24) |
        (q.peekU8(start + 1) << 16) |
        (q.peekU8(start + 2) << 8) |
        q.peekU8(start + 3)) >>>
      0;
    if (q.length < start + 4 + len) return false;
    const reason = q.read(start + 4 + len).toString('utf8', start + 4);
    throw new Error(`${what}: ${reason}`);
  }

  private readMessage(): boolean {
    const q = this.queue;
    if (q.length < 1) return false;
    const type = q.peekU8(0);
    switch (type) {
      case 0: {
        if (q.length < 4) return false;
        const head = q.read(4);
        this.rectsLeft = head.readUInt16BE(2);
        this.updateArrivedAt = this.chunkArrivedAt;
        if (this.rectsLeft === 0) this.endUpdate();
        return true;
      }
      case 1: {
        if (q.length < 6) return false;
        const n = (q.peekU8(4) << 8) | q.peekU8(5);
        if (q.length < 6 + 6 * n) return false;
        q.read(6 + 6 * n); // true colour: no palette to keep
        return true;
      }
      case 2:
        q.read(1);
        return true;
      case 3: {
        if (q.length < 8) return false;
        const len =
          ((q.peekU8(4) << 24) | (q.peekU8(5) << 16) | (q.peekU8(6) << 8) | q.peekU8(7)) >>> 0;
        if (q.length < 8 + len) return false;
        q.read(8 + len);
        return true;
      }
      default:
        throw new Error(`unknown RFB server message ${type}`);
    }
  }

  private readRect(): boolean {
    const q = this.queue;
    if (q.length < 12) return false;
    const head = q.read(12);
    const x = head.readUInt16BE(0);
    const y = head.readUInt16BE(2);
    const w = head.readUInt16BE(4);
    const h = head.readUInt16BE(6);
    const encoding = head.readInt32BE(8);
    this.rect = { x, y, w, h };
    if (encoding === ENC_RAW) {
      this.body = 'raw';
    } else if (encoding === ENC_HEXTILE) {
      // outside the framebuffer (a resize raced it): its bytes are read and dropped
      const inside = x + w <= this.width && y + h <= this.height;
      this.hextile.begin(this.rect, inside ? this.pixels : null, this.width);
      this.body = 'hextile';
      if (this.hextile.done) {
        this.body = null;
        this.rectDone();
      }
    } else if (encoding === ENC_EXTENDED_DESKTOP_SIZE) {
      this.body = 'extended';
    } else if (encoding === ENC_DESKTOP_SIZE) {
      this.resize(w, h);
      this.rectDone();
    } else if (encoding === ENC_QEMU_LED_STATE) {
      this.body = 'leds';
    } else {
      throw new Error(`RFB encoding ${encoding} was not asked for`);
    }
    return true;
  }

  /** The rectangle whose body is awaited (its header was read). */
  private rect = { x: 0, y: 0, w: 0, h: 0 };
  private body: 'raw' | 'hextile' | 'extended' | 'leds' | null = null;

  private readLedBody(): boolean {
    if (this.queue.length < 1) return false;
    const bits = this.queue.read(1)[0]!;
    this.body = null;
    this.emit('leds', { scroll: (bits & 1) !== 0, num: (bits & 2) !== 0, caps: (bits & 4) !== 0 });
    this.rectDone();
    return true;
  }

  private readRawBody(): boolean {
    const r = this.rect;
    const size = r.w * r.h * 4;
    if (this.queue.length < size) return false;
    this.copyRect(r.x, r.y, r.w, r.h, this.queue.read(size));
    this.body = null;
    this.rectDone();
    return true;
  }

  /** Decodes the whole tiles queued; the rest waits for more bytes. */
  private readHextileBody(): boolean {
    const q = this.queue;
    if (q.length === 0) return false;
    const data = q.takeAll();
    const used = this.hextile.decode(data);
    q.unshift(data.subarray(used));
    if (!this.hextile.done) return false;
    this.body = null;
    this.rectDone();
    return true;
  }

  private readExtendedBody(): boolean {
    const q = this.queue;
    if (q.length < 4) return false;
    const screens = q.peekU8(0);
    if (q.length < 4 + 16 * screens) return false;
    q.read(4 + 16 * screens);
    const r = this.rect;
    // x carries the reason, y the status; a change of size is what matters here.
    if (r.w !== this.width || r.h !== this.height) this.resize(r.w, r.h);
    this.body = null;
    this.rectDone();
    return true;
  }

  private copyRect(x: number, y: number, w: number, h: number, data: Buffer): void {
    if (x + w > this.width || y + h > this.height) return; // outside: a resize raced it
    const stride = this.width * 4;
    const row = w * 4;
    if (x === 0 && w === this.width) {
      data.copy(this.framebuffer, y * stride, 0, row * h);
      return;
    }
    for (let i = 0; i < h; i++) {
      data.copy(this.framebuffer, (y + i) * stride + x * 4, i * row, (i + 1) * row);
    }
  }

  private rectDone(): void {
    this.rectsLeft -= 1;
    if (this.rectsLeft === 0) this.endUpdate();
  }

  private endUpdate(): void {
    this.rectsLeft = -1;
    this.emit('update', this.updateArrivedAt);
  }
}
