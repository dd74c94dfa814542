/** The time-zone group's state: the device clock, its zone and the city zones it knows. */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { SystemTimeResult } from '@kvm/protocol/system';
import { getSystemTime, getTimezoneList, setCityTimezone, setTimeZoneMinutes } from './system-api';
import { timeZoneMinutesFor } from './time-zone';

export interface TimeState {
  time: SystemTimeResult | null;
  /** Local Date.now() when `time` was read. */
  receivedAt: number;
  zones: readonly string[];
  loadFailed: boolean;
  busy: boolean;
}

export interface TimeStore extends StoreApi<TimeState> {
  load(): Promise<void>;
  /** A whole-hour UTC offset (SPEC 3's list), sent with the inverted sign. */
  setOffset(hoursEast: number): Promise<void>;
  setCity(zone: string): Promise<void>;
  dispose(): void;
}

/** One per open group (its requests end with it): a zustand store plus its actions. */
export function createTimeStore(): TimeStore {
  const store = createStore<TimeState>()(() => ({
    time: null,
    receivedAt: 0,
    zones: [],
    loadFailed: false,
    busy: false,
  }));
  const { setState } = store;
  const controller = new AbortController();

  const load = async (): Promise<void> => {
    const signal = controller.signal;
    const [time, zones] = await Promise.allSettled([
      getSystemTime(signal),
      getTimezoneList(signal),
    ]);
    if (signal.aborted) return;
    if (time.status === 'fulfilled') {
      setState({ time: time.value, receivedAt: Date.now(), loadFailed: false });
    } else {
      setState({ loadFailed: true });
    }
    if (zones.status === 'fulfilled') setState({ zones: zones.value });
  };

  const change = async (send: () => Promise<unknown>): Promise<void> => {
    setState({ busy: true });
    try {
      await send();
      const time = await getSystemTime(controller.signal);
      setState({ time, receivedAt: Date.now() });
    } finally {
      setState({ busy: false });
    }
  };

  return Object.assign(store, {
    load,
    setOffset: (hoursEast: number) =>
      change(() => setTimeZoneMinutes(timeZoneMinutesFor(hoursEast))),
    setCity: (zone: string) => change(() => setCityTimezone(zone)),
    dispose: () => controller.abort(),
  });
}
