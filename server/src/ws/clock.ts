/**
 * The clock the console's latency readout dates frames with (docs/events.md "clock"): a client
 * sends `{event_type:"clock", event:{id}}` on /api/ws and gets `{event_type:"clock",
 * event:{id, server_ms, mono_ms}}` back at once: `server_ms` the device's epoch ms on the clock
 * capture times are on (performance.timeOrigin + performance.now(), what abs-capture-time and
 * the direct socket's capture time carry), `mono_ms` the same instant's performance.now() (the
 * clock of the RTP timestamps, 90 kHz of it: media/encoder.ts). The console halves the round
 * trip of its fastest exchanges to place that clock against its own
 * (web/src/features/video/latency-readout.ts). Replies count against the socket's reply budget
 * like pings.
 */
import type { EventHub } from './event-hub';

export function attachClock(hub: EventHub): void {
  hub.onJson('clock', (client, event) => {
    const id = typeof event['id'] === 'number' && Number.isFinite(event['id']) ? event['id'] : 0;
    const mono = performance.now();
    client.guard.replyWith(
      JSON.stringify({
        event_type: 'clock',
        event: { id, server_ms: performance.timeOrigin + mono, mono_ms: mono },
      }),
    );
  });
}
