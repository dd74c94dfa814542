/**
 * The units since the last key frame, so a new viewer starts at once on a key frame instead of
 * waiting up to a whole GOP. Bounded by bytes and by units: a GOP that would pass either bound
 * is dropped whole and the cache stays empty until the next key frame. A late joiner then
 * waits for that key frame (the hub asks for one), which is better than a GOP with a hole in
 * it: a decoder given a gap shows smeared garbage until the next key frame anyway.
 *
 * Invariant (tested over random sequences): `units()` is empty or is a key unit followed by
 * every unit pushed after it, in order.
 */
import type { AccessUnit } from './types';

export interface GopCacheLimits {
  /** Sum of `data.length` over the cached units. */
  maxBytes: number;
  /** Number of cached units (a GOP of 240 frames at most, by STREAMER_LIMITS). */
  maxUnits: number;
}

export const DEFAULT_GOP_CACHE_LIMITS: GopCacheLimits = {
  maxBytes: 16 * 1024 * 1024,
  maxUnits: 512,
};

export class GopCache {
  private gop: AccessUnit[] = [];
  private bytes = 0;
  /** The current GOP passed a bound: nothing is kept until the next key unit. */
  private overflow = false;
  /** Units the cache could not keep for a late joiner because of its bounds, since start. */
  dropped = 0;

  constructor(private readonly limits: GopCacheLimits = DEFAULT_GOP_CACHE_LIMITS) {}

  /** The cached GOP, oldest first (a copy: the caller may hold it while units arrive). */
  units(): AccessUnit[] {
    return [...this.gop];
  }

  get size(): number {
    return this.gop.length;
  }

  get byteLength(): number {
    return this.bytes;
  }

  /** The GOP in progress was dropped: a late joiner waits for the next key unit. */
  get overflowed(): boolean {
    return this.overflow;
  }

  /** Adds a unit; returns how many units this call dropped (0 when it fit). */
  push(unit: AccessUnit): number {
    if (unit.key) {
      // A new GOP replaces the old one: that is the cache working, not a drop.
      this.gop = [];
      this.bytes = 0;
      this.overflow = false;
    } else if (this.gop.length === 0) {
      // No key unit to start from (the GOP overflowed, or the encoder restarted): a late
      // joiner could not decode this unit anyway. Counted only after an overflow, since
      // otherwise nothing was lost to the bound.
      if (this.overflow) {
        this.dropped += 1;
        return 1;
      }
      return 0;
    }
    const size = unit.data.length;
    if (this.bytes + size > this.limits.maxBytes || this.gop.length + 1 > this.limits.maxUnits) {
      const lost = this.gop.length + 1;
      this.gop = [];
      this.bytes = 0;
      this.overflow = true;
      this.dropped += lost;
      return lost;
    }
    this.gop.push(unit);
    this.bytes += size;
    return 0;
  }

  /** Forgets the cached GOP (encoder restarted: its next unit is a new key unit). */
  clear(): void {
    this.gop = [];
    this.bytes = 0;
    this.overflow = false;
  }
}
