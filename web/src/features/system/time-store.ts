/** The time-zone group's state: the device clock, its zone and the city zones it knows. */
import type { SystemTimeResult } from '@kvm/protocol/system';
import { getSystemTime, getTimezoneList, setCityTimezone, setTimeZoneMinutes } from './system-api';
import { Store } from './store';
import { timeZoneMinutesFor } from './time-zone';

export interface TimeState {
  time: SystemTimeResult | null;
  /** Local Date.now() when `time` was read. */
  receivedAt: number;
  zones: readonly string[];
  loadFailed: boolean;
  busy: boolean;
}

export class TimeStore extends Store<TimeState> {
  private readonly controller = new AbortController();

  constructor() {
    super({ time: null, receivedAt: 0, zones: [], loadFailed: false, busy: false });
  }

  async load(): Promise<void> {
    const signal = this.controller.signal;
    const [time, zones] = await Promise.allSettled([
      getSystemTime(signal),
      getTimezoneList(signal),
    ]);
    if (signal.aborted) return;
    if (time.status === 'fulfilled') {
      this.setState({ time: time.value, receivedAt: Date.now(), loadFailed: false });
    } else {
      this.setState({ loadFailed: true });
    }
    if (zones.status === 'fulfilled') this.setState({ zones: zones.value });
  }

  /** A whole-hour UTC offset (SPEC 3's list), sent with the inverted sign. */
  setOffset(hoursEast: number): Promise<void> {
    return this.change(() => setTimeZoneMinutes(timeZoneMinutesFor(hoursEast)));
  }

  setCity(zone: string): Promise<void> {
    return this.change(() => setCityTimezone(zone));
  }

  private async change(send: () => Promise<unknown>): Promise<void> {
    this.setState({ busy: true });
    try {
      await send();
      const time = await getSystemTime(this.controller.signal);
      this.setState({ time, receivedAt: Date.now() });
    } finally {
      this.setState({ busy: false });
    }
  }

  dispose(): void {
    this.controller.abort();
  }
}
