/**
 * The screen wall's per-replica cache (docs/cloud.md "The screen wall"): one entry per device
 * some wall socket on this replica watches. An entry asks its device for a snapshot through the
 * relay (`command(id, 'snapshot', box)`, so the device may be on another replica), one request
 * in flight at a time and not more often than the interval, only while at least one of its
 * watchers is not paused; every watcher gets the picture when its bytes changed (SHA-1 of the
 * JPEG) or when it starts watching, and a state frame when online / signal changed. An entry
 * whose last watcher left is dropped after `dropAfterMs`, so memory follows what is on screen.
 */
import { createHash } from 'node:crypto';
import {
  WALL_MAX_HEIGHT,
  WALL_MAX_WIDTH,
  WALL_SNAPSHOT_QUALITY,
  type WallServerFrame,
} from '@kvm/protocol';
import { DeviceCommandError, DeviceOfflineError } from '../agents/errors';

export type WallState = Extract<WallServerFrame, { t: 'state' }>;

/** A socket's side, as the hub sees it. */
export interface WallWatcher {
  /** Paused (the tab is hidden): the hub asks nothing for it. */
  readonly paused: boolean;
  state(frame: WallState): void;
  picture(id: string, jpeg: Buffer): void;
}

export interface WallHubOptions {
  /** `relay.command(id, 'snapshot', args, timeoutMs)`. */
  snapshot(deviceId: string, args: Record<string, unknown>, timeoutMs: number): Promise<unknown>;
  intervalMs: number;
  /** An entry without watchers lives this long (30 s). */
  dropAfterMs?: number;
  /**
   * A snapshot request's time limit (default: two intervals, at least 10 s): one request is in
   * flight per device anyway, and a late answer of a busy device is still a new picture.
   */
  timeoutMs?: number;
  onError?(deviceId: string, err: unknown): void;
}

interface SnapshotResult {
  width: number;
  height: number;
  online: boolean;
  jpeg: string;
}

function isSnapshot(v: unknown): v is SnapshotResult {
  const r = v as Partial<SnapshotResult> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.jpeg === 'string' &&
    typeof r.width === 'number' &&
    typeof r.height === 'number' &&
    typeof r.online === 'boolean'
  );
}

class Entry {
  readonly watchers = new Set<WallWatcher>();
  inFlight = false;
  /** When the last request started (ms, Date.now()). */
  lastAsked = -Infinity;
  timer: NodeJS.Timeout | null = null;
  dropTimer: NodeJS.Timeout | null = null;
  jpeg: Buffer | null = null;
  hash = '';
  state: WallState;
  /** A state has been learned (the first request answered or failed). */
  known = false;

  constructor(readonly id: string) {
    this.state = { t: 'state', id, online: false, signal: false, at: null };
  }

  get active(): boolean {
    for (const w of this.watchers) if (!w.paused) return true;
    return false;
  }
}

export class WallHub {
  private readonly entries = new Map<string, Entry>();
  /** Snapshot requests sent (tests and the bench count them). */
  requests = 0;
  private closed = false;

  constructor(private readonly opts: WallHubOptions) {}

  get size(): number {
    return this.entries.size;
  }

  has(deviceId: string): boolean {
    return this.entries.has(deviceId);
  }

  /** `w` watches `deviceId`: the last state and picture at once, then changes. */
  watch(w: WallWatcher, deviceId: string): void {
    let e = this.entries.get(deviceId);
    if (!e) {
      e = new Entry(deviceId);
      this.entries.set(deviceId, e);
    }
    if (e.dropTimer) {
      clearTimeout(e.dropTimer);
      e.dropTimer = null;
    }
    if (e.watchers.has(w)) return;
    e.watchers.add(w);
    if (e.known) w.state(e.state);
    if (e.jpeg && e.state.signal) w.picture(deviceId, e.jpeg);
    this.schedule(e);
  }

  unwatch(w: WallWatcher, deviceId: string): void {
    const e = this.entries.get(deviceId);
    if (!e || !e.watchers.delete(w)) return;
    if (e.watchers.size > 0) return;
    if (e.timer) clearTimeout(e.timer);
    e.timer = null;
    e.dropTimer = setTimeout(() => {
      if (e.watchers.size === 0 && this.entries.get(deviceId) === e) this.entries.delete(deviceId);
    }, this.opts.dropAfterMs ?? 30_000);
    e.dropTimer.unref();
  }

  /** A watcher paused or resumed: entries it watches start or stop asking. */
  wake(deviceIds: Iterable<string>): void {
    for (const id of deviceIds) {
      const e = this.entries.get(id);
      if (e) this.schedule(e);
    }
  }

  close(): void {
    this.closed = true;
    for (const e of this.entries.values()) {
      if (e.timer) clearTimeout(e.timer);
      if (e.dropTimer) clearTimeout(e.dropTimer);
    }
    this.entries.clear();
  }

  /** The next request: at once if the interval has passed, else when it will have. */
  private schedule(e: Entry): void {
    if (this.closed || e.inFlight || e.timer || !e.active) return;
    const wait = Math.max(0, e.lastAsked + this.opts.intervalMs - Date.now());
    e.timer = setTimeout(() => {
      e.timer = null;
      void this.ask(e);
    }, wait);
    e.timer.unref();
  }

  private async ask(e: Entry): Promise<void> {
    if (this.closed || !e.active || this.entries.get(e.id) !== e) return;
    e.inFlight = true;
    e.lastAsked = Date.now();
    this.requests += 1;
    try {
      const r = await this.opts.snapshot(
        e.id,
        { max_width: WALL_MAX_WIDTH, max_height: WALL_MAX_HEIGHT, quality: WALL_SNAPSHOT_QUALITY },
        this.opts.timeoutMs ?? Math.max(10_000, 2 * this.opts.intervalMs),
      );
      if (!isSnapshot(r)) throw new DeviceCommandError('The device answered no picture');
      if (!r.online) {
        this.setState(e, { online: true, signal: false });
      } else {
        const jpeg = Buffer.from(r.jpeg, 'base64');
        const hash = createHash('sha1').update(jpeg).digest('hex');
        this.setState(e, {
          online: true,
          signal: true,
          at: Date.now(),
          width: r.width,
          height: r.height,
        });
        if (hash !== e.hash) {
          e.hash = hash;
          e.jpeg = jpeg;
          for (const w of e.watchers) w.picture(e.id, jpeg);
        }
      }
    } catch (err) {
      if (err instanceof DeviceOfflineError) this.setState(e, { online: false, signal: false });
      else if (err instanceof DeviceCommandError && /^unavailable\b/.test(err.message)) {
        this.setState(e, { online: true, signal: false });
      } else {
        // a timeout or a refusal: the state stays what it was; the next interval asks again
        this.opts.onError?.(e.id, err);
      }
    } finally {
      e.inFlight = false;
      this.schedule(e);
    }
  }

  /** Online / signal: a state frame to every watcher when they changed (or the first time). */
  private setState(e: Entry, s: Partial<WallState> & { online: boolean; signal: boolean }): void {
    const changed =
      !e.known ||
      e.state.online !== s.online ||
      e.state.signal !== s.signal ||
      (s.width !== undefined && (s.width !== e.state.width || s.height !== e.state.height));
    const at = s.at ?? e.state.at;
    e.state = { t: 'state', id: e.id, online: s.online, signal: s.signal, at };
    if (s.signal && s.width !== undefined) {
      e.state.width = s.width;
      e.state.height = s.height;
    }
    e.known = true;
    if (!s.signal) {
      e.jpeg = null;
      e.hash = '';
    }
    if (changed) for (const w of e.watchers) w.state(e.state);
  }
}
