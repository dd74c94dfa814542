/**
 * The browser's camera to the gadget's webcam (issue 24): VP8 RTP from a peer (RFC 7741) →
 * whole frames → IVF on ffmpeg's stdin → decoded, scaled (aspect kept, padded) to the webcam's
 * size as YUYV 4:2:2 → one frame at a time to the camera service (services/camera), which hands
 * it to the frame server (server/native/uvc-stream).
 *
 * - One sender at a time: the newest takes over; a replaced sender is ignored until it goes.
 * - The decoder starts at the first key frame (a key frame is asked for when a sender starts and
 *   after a lost packet: frames that depend on a lost one are skipped until the next key frame),
 *   and stops `idleMs` after the last packet or at once when the sender goes.
 * - Bounded: a frame is written to ffmpeg only while its stdin holds less than `maxQueueBytes`
 *   (else dropped and counted); a frame being reassembled is capped at `maxFrameBytes`.
 */
import type { Logger } from '../log';
import { Supervisor } from '../process/supervisor';

/** What the sink feeds (services/camera/camera-service.ts). */
export interface CameraFrameTarget {
  readonly frameSize: number;
  readonly size: { width: number; height: number };
  pushFrame(frame: Buffer): boolean;
  setActive(sender: string, active: boolean): void;
}

export interface CameraSinkOptions {
  ffmpeg?: string;
  idleMs?: number;
  maxQueueBytes?: number;
  maxFrameBytes?: number;
  /** Asks the sender's browser for a key frame (RTCP PLI). */
  keyFrame: (sender: string) => void;
}

export interface CameraSinkStats {
  /** VP8 frames written to the decoder. */
  frames: number;
  /** VP8 frames dropped: decoder behind, incomplete (a lost packet) or before a key frame. */
  dropped: number;
  /** Decoded frames handed to the webcam. */
  decoded: number;
}

const DEFAULT_IDLE_MS = 2000;
const DEFAULT_MAX_QUEUE_BYTES = 512 * 1024;
const DEFAULT_MAX_FRAME_BYTES = 2 * 1024 * 1024;

/** One RTP packet's fields this sink uses (RFC 3550), or null when it is not RTP. */
export function parseRtp(
  buf: Buffer,
): { marker: boolean; seq: number; ts: number; ssrc: number; payload: Buffer } | null {
  if (buf.length < 12 || buf[0]! >> 6 !== 2) return null;
  const cc = buf[0]! & 0x0f;
  let offset = 12 + cc * 4;
  if (buf[0]! & 0x10) {
    if (buf.length < offset + 4) return null;
    offset += 4 + buf.readUInt16BE(offset + 2) * 4;
  }
  let end = buf.length;
  if (buf[0]! & 0x20) end -= buf[buf.length - 1]!;
  if (offset > end) return null;
  return {
    marker: (buf[1]! & 0x80) !== 0,
    seq: buf.readUInt16BE(2),
    ts: buf.readUInt32BE(4),
    ssrc: buf.readUInt32BE(8),
    payload: buf.subarray(offset, end),
  };
}

/** The VP8 payload descriptor (RFC 7741 4.2): where the VP8 data starts, and S/PID. */
export function parseVp8Descriptor(
  p: Buffer,
): { start: boolean; partition: number; data: Buffer } | null {
  if (p.length < 1) return null;
  let i = 1;
  if (p[0]! & 0x80) {
    if (p.length < 2) return null;
    const x = p[1]!;
    i = 2;
    if (x & 0x80) i += p[i]! & 0x80 ? 2 : 1;
    if (x & 0x40) i += 1;
    if (x & 0x30) i += 1;
  }
  if (i > p.length) return null;
  return { start: (p[0]! & 0x10) !== 0, partition: p[0]! & 0x07, data: p.subarray(i) };
}

/** The 32-byte IVF file header for VP8 at a 90 kHz time base. */
export function ivfHeader(width: number, height: number): Buffer {
  const h = Buffer.alloc(32);
  h.write('DKIF', 0, 'latin1');
  h.writeUInt16LE(0, 4);
  h.writeUInt16LE(32, 6);
  h.write('VP80', 8, 'latin1');
  h.writeUInt16LE(width, 12);
  h.writeUInt16LE(height, 14);
  h.writeUInt32LE(90_000, 16);
  h.writeUInt32LE(1, 20);
  return h;
}

/** One IVF frame: 4-byte size, 8-byte pts, the frame. */
export function ivfFrame(frame: Buffer, pts: number): Buffer {
  const h = Buffer.alloc(12);
  h.writeUInt32LE(frame.length, 0);
  h.writeBigUInt64LE(BigInt(Math.max(0, Math.floor(pts))), 4);
  return Buffer.concat([h, frame]);
}

/** ffmpeg's command line: IVF VP8 on stdin → YUYV frames of width x height on stdout (pure). */
export function cameraDecoderArgs(width: number, height: number): string[] {
  const fit =
    `scale=${width}:${height}:force_original_aspect_ratio=decrease,` +
    `pad=${width}:${height}:(ow-iw)/2:(oh-ih)/2,format=yuyv422`;
  return [
    '-hide_banner',
    '-loglevel',
    'error',
    // the first frame out at once: no probing (ffmpeg would read 5 s of the camera first).
    // Not `-fflags nobuffer`: ffmpeg 5.1's ivf input then fails every frame ("Invalid data").
    '-probesize',
    '32',
    '-analyzeduration',
    '0',
    '-f',
    'ivf',
    '-i',
    'pipe:0',
    '-vf',
    fit,
    // each decoded frame once (the IVF's 90 kHz time base would make ffmpeg fill 90000 fps)
    '-fps_mode',
    'passthrough',
    // every frame leaves at once (not when 32 KiB of output have gathered)
    '-flush_packets',
    '1',
    '-f',
    'rawvideo',
    '-pix_fmt',
    'yuyv422',
    'pipe:1',
  ];
}

export class CameraSink {
  readonly stats: CameraSinkStats = { frames: 0, dropped: 0, decoded: 0 };
  private sender: string | null = null;
  private readonly replaced = new Set<string>();
  private decoder: Supervisor | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  /** The frame being reassembled. */
  private parts: Buffer[] = [];
  private partsBytes = 0;
  private frameTs: number | null = null;
  private lastSeq: number | null = null;
  /** A packet was lost: skip until the next key frame. */
  private broken = true;
  private firstTs: number | null = null;
  private out: Buffer[] = [];
  private outBytes = 0;
  /** What waits for the decoder to start (an IVF header and frames; bounded by maxQueueBytes). */
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(
    private readonly target: CameraFrameTarget,
    private readonly log: Logger,
    private readonly opts: CameraSinkOptions,
  ) {}

  /** One RTP packet of `sender`'s camera. */
  push(sender: string, rtp: Buffer): void {
    if (this.replaced.has(sender)) return;
    if (this.sender !== sender) {
      if (this.sender) {
        this.replaced.add(this.sender);
        this.target.setActive(this.sender, false);
        this.stopDecoder();
      }
      this.sender = sender;
      this.target.setActive(sender, true);
      this.reset();
      this.opts.keyFrame(sender);
    }
    this.armIdle();
    const p = parseRtp(rtp);
    if (!p) return;
    if (this.lastSeq !== null && p.seq !== ((this.lastSeq + 1) & 0xffff)) {
      // a lost (or reordered) packet: the frame is incomplete; wait for a key frame
      if (!this.broken) this.opts.keyFrame(sender);
      this.broken = true;
      this.parts = [];
      this.partsBytes = 0;
      this.frameTs = null;
    }
    this.lastSeq = p.seq;
    const d = parseVp8Descriptor(p.payload);
    if (!d) return;
    if (d.start && d.partition === 0) {
      this.parts = [];
      this.partsBytes = 0;
      this.frameTs = p.ts;
    } else if (this.frameTs !== p.ts) {
      return;
    }
    this.parts.push(d.data);
    this.partsBytes += d.data.length;
    if (this.partsBytes > (this.opts.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES)) {
      this.parts = [];
      this.partsBytes = 0;
      this.frameTs = null;
      this.stats.dropped += 1;
      return;
    }
    if (p.marker) this.frameDone(p.ts);
  }

  /** The sender's peer closed: its camera stops. */
  senderGone(sender: string): void {
    this.replaced.delete(sender);
    if (this.sender !== sender) return;
    this.target.setActive(sender, false);
    this.sender = null;
    this.stopDecoder();
  }

  async dispose(): Promise<void> {
    if (this.sender) this.target.setActive(this.sender, false);
    this.sender = null;
    await this.stopDecoder();
  }

  // ---- internals ----

  private reset(): void {
    this.parts = [];
    this.partsBytes = 0;
    this.frameTs = null;
    this.lastSeq = null;
    this.broken = true;
    this.firstTs = null;
  }

  private frameDone(ts: number): void {
    const frame = Buffer.concat(this.parts);
    this.parts = [];
    this.partsBytes = 0;
    this.frameTs = null;
    const key = frame.length > 0 && (frame[0]! & 0x01) === 0;
    if (this.broken && !key) {
      this.stats.dropped += 1;
      return;
    }
    this.broken = false;
    const decoder = this.ensureDecoder();
    const max = this.opts.maxQueueBytes ?? DEFAULT_MAX_QUEUE_BYTES;
    const queued =
      decoder.state === 'running' ? (decoder.stdin?.writableLength ?? 0) : this.pendingBytes;
    if (queued > max || decoder.stdin?.destroyed) {
      // the decoder is behind: what follows this frame needs it, so wait for a key frame
      this.stats.dropped += 1;
      this.broken = true;
      if (this.sender) this.opts.keyFrame(this.sender);
      return;
    }
    if (this.firstTs === null) {
      this.firstTs = ts;
      this.write(ivfHeader(this.target.size.width, this.target.size.height));
    }
    this.write(ivfFrame(frame, (ts - this.firstTs) >>> 0));
    this.stats.frames += 1;
  }

  /** To the decoder, or held (bounded above) while it starts. */
  private write(data: Buffer): void {
    const stdin = this.decoder?.state === 'running' ? this.decoder.stdin : null;
    if (stdin) {
      stdin.write(data);
      return;
    }
    this.pending.push(data);
    this.pendingBytes += data.length;
  }

  private ensureDecoder(): Supervisor {
    if (this.decoder) return this.decoder;
    const { width, height } = this.target.size;
    const sup = new Supervisor({
      name: 'ffmpeg-camera',
      command: this.opts.ffmpeg ?? 'ffmpeg',
      args: cameraDecoderArgs(width, height),
      stdin: 'pipe',
      stdout: 'data',
      backoff: { initialMs: 500, maxMs: 5000 },
    });
    sup.on('data', (chunk) => this.onDecoded(chunk));
    sup.on('output', (line) => this.log.debug({ line }, 'ffmpeg-camera'));
    sup.on('started', () => {
      const stdin = sup.stdin;
      stdin?.on('error', () => undefined);
      for (const b of this.pending.splice(0)) stdin?.write(b);
      this.pendingBytes = 0;
    });
    sup.on('exited', (info) => {
      if (info.expected) return;
      this.log.warn({ code: info.code, signal: info.signal }, 'camera: the decoder ended');
      // a new decoder needs a new IVF header and a key frame
      this.firstTs = null;
      this.pending = [];
      this.pendingBytes = 0;
      this.broken = true;
      if (this.sender) this.opts.keyFrame(this.sender);
    });
    this.decoder = sup;
    this.firstTs = null;
    void sup.ensureStarted().catch((err: Error) => {
      this.log.warn({ err: err.message }, 'camera: the decoder did not start');
    });
    return sup;
  }

  private onDecoded(chunk: Buffer): void {
    this.out.push(chunk);
    this.outBytes += chunk.length;
    const size = this.target.frameSize;
    if (this.outBytes < size) return;
    let all = Buffer.concat(this.out);
    while (all.length >= size) {
      this.target.pushFrame(all.subarray(0, size));
      this.stats.decoded += 1;
      all = all.subarray(size);
    }
    this.out = all.length ? [Buffer.from(all)] : [];
    this.outBytes = all.length;
  }

  private armIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.sender) this.target.setActive(this.sender, false);
      this.sender = null;
      void this.stopDecoder();
    }, this.opts.idleMs ?? DEFAULT_IDLE_MS);
    this.idleTimer.unref?.();
  }

  private async stopDecoder(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    const d = this.decoder;
    this.decoder = null;
    this.out = [];
    this.outBytes = 0;
    this.pending = [];
    this.pendingBytes = 0;
    this.firstTs = null;
    if (!d) return;
    await d.ensureStopped();
    d.removeAllListeners();
  }
}
