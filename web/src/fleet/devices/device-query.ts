/**
 * The device list's query (`GET devices`, FleetDevicePage): search, group, online filter and the
 * cursor pages walked so far (previous = the cursor before). A plain class; pages subscribe to
 * its snapshot (useSyncExternalStore). An answer an older request overtook is dropped.
 */
import { FLEET_PAGE_DEFAULT, type FleetDevicePage } from '@kvm/protocol/fleet';
import { api } from '../lib/api';

export interface DeviceFilter {
  q: string;
  group: string;
  /** '' all, 'true', 'false' */
  online: string;
}

export interface DeviceListSnapshot {
  page: FleetDevicePage | null;
  /** 0 for the first page. */
  index: number;
  hasPrevious: boolean;
  hasNext: boolean;
}

export class DeviceQuery {
  /** cursors[i] is the cursor of page i (null for the first). */
  private cursors: Array<string | null> = [null];
  private index = 0;
  private filter: DeviceFilter = { q: '', group: '', online: '' };
  private seq = 0;
  private snapshot: DeviceListSnapshot = {
    page: null,
    index: 0,
    hasPrevious: false,
    hasNext: false,
  };
  private readonly listeners = new Set<() => void>();

  constructor(private readonly limit = FLEET_PAGE_DEFAULT) {}

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  getSnapshot = (): DeviceListSnapshot => this.snapshot;

  /** A new filter starts at the first page. */
  setFilter(filter: DeviceFilter): Promise<void> {
    this.filter = filter;
    this.cursors = [null];
    this.index = 0;
    return this.load();
  }

  async load(): Promise<void> {
    const n = ++this.seq;
    const index = this.index;
    const answer = await api.get<FleetDevicePage>('devices', {
      q: this.filter.q.trim() || undefined,
      group: this.filter.group || undefined,
      online: this.filter.online || undefined,
      limit: this.limit,
      cursor: this.cursors[index] ?? undefined,
    });
    if (n !== this.seq) return;
    this.cursors[index + 1] = answer.next;
    this.snapshot = {
      page: answer,
      index,
      hasPrevious: index > 0,
      hasNext: Boolean(answer.next),
    };
    for (const fn of this.listeners) fn();
  }

  next(): Promise<void> {
    if (!this.cursors[this.index + 1]) return Promise.resolve();
    this.index += 1;
    return this.load();
  }

  previous(): Promise<void> {
    if (this.index === 0) return Promise.resolve();
    this.index -= 1;
    return this.load();
  }
}
