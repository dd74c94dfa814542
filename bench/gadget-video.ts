/**
 * The gadget bench's HDMI capture figures (issue 24; docs/hardware.md "Capture"), called by
 * bench/gadget.ts with its booted device VM. vivid plays the HDMI bridge (/dev/video0); the
 * observer's `hdmi` command sets its signal mode or timings and answers the VM's clock at that
 * moment (`setAt`), mapped onto ours by the shortest of a few pings (as gadget.ts does). The
 * server's side is its `streamer` event on /api/ws arriving here. Every figure is TCG's.
 * - signal_change_to_state_ms: vivid "No Signal" set -> the streamer event saying
 *   `capture.status: no_signal` (`hdmi.signal` false; the console adds SPEC's 5 s before it
 *   says "No HDMI signal"), median over SIGNAL_FLIPS, each back to a signal in between.
 * - resolution_change_to_stream_ms: new timings (640x480p59 <-> 720x480p59; TCG cannot encode
 *   720p or 1080p in time, see device-vm-video.ts) -> the streamer event with the new resolution and the
 *   new encoder online (its first key frame; the hub's stats roll each second, so up to 1 s late),
 *   with the socket's `stream=1` keeping the encoder wanted as a viewer would.
 * - edid_apply_ms: POST /api/upgrade/edid (a preset) -> its answer: write, read back, compare.
 * - capture_fps: frames a second read from /dev/video0 at 1920x1080p60 by v4l2-ctl's mmap
 *   streaming in the VM (the device, not the encoder; the server's encoder stopped first).
 *   vivid draws each frame on the CPU, so under TCG this is the emulated CPU's speed at drawing
 *   and copying 4 MB YUYV frames, not a capture chip's (which would give its source's 60).
 */
import WebSocket from 'ws';
import type { DeviceVm } from '../e2e/fixtures/device-vm';
import { median, note, round, sized } from './lib';

const SIGNAL_FLIPS = sized(5, 2);
const RESOLUTION_FLIPS = sized(4, 2);
const CAPTURE_FRAMES = sized(180, 60);
const EDID_APPLIES = sized(4, 2);

interface Streamer {
  source: { resolution: { width: number; height: number } };
  h264: { online: boolean };
  capture?: { status: string; width: number; height: number };
}

export async function videoFigures(
  vm: DeviceVm,
  token: string,
): Promise<Record<string, number | null>> {
  // the VM's clock onto ours: the shortest ping's midpoint
  let clock = { offset: 0, bound: Infinity };
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    const reply = await vm.command('ping');
    const rtt = reply.hostT - t0;
    if (rtt / 2 < clock.bound) clock = { offset: reply.t - (t0 + rtt / 2), bound: rtt / 2 };
  }
  const hostTimeOf = (vmT: number): number => vmT - clock.offset;

  const events: Array<{ at: number; s: Streamer }> = [];
  const ws = new WebSocket(`wss://127.0.0.1:${vm.port}/api/ws?stream=1`, {
    headers: { token },
    rejectUnauthorized: false,
  });
  ws.on('message', (data: Buffer) => {
    try {
      const m = JSON.parse(data.toString('utf8')) as {
        event_type?: string;
        event?: { streamer?: Streamer };
      };
      if (m.event_type === 'streamer' && m.event?.streamer) {
        events.push({ at: performance.now(), s: m.event.streamer });
      }
    } catch {
      // binary frames are not JSON
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const waitFor = async (
    what: string,
    since: number,
    pred: (s: Streamer) => boolean,
    ms = 120_000,
  ) => {
    const deadline = performance.now() + ms;
    for (;;) {
      const hit = events.slice(since).find((e) => pred(e.s));
      if (hit) return hit.at;
      if (performance.now() > deadline)
        throw new Error(`video bench: timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const hdmi = async (args: Record<string, string>): Promise<number> =>
    hostTimeOf(Number((await vm.command('hdmi', args))['setAt']));

  try {
    await hdmi({ timings: '640x480p59' });
    await waitFor(
      'a 720p picture',
      0,
      (s) => s.capture?.status === 'signal' && s.capture.width === 640,
    );

    note(`gadget: ${SIGNAL_FLIPS} HDMI signal losses`);
    const signal: number[] = [];
    for (let i = 0; i < SIGNAL_FLIPS; i++) {
      const since = events.length;
      const setAt = await hdmi({ signal: 'no_signal' });
      signal.push(
        (await waitFor('no_signal', since, (s) => s.capture?.status === 'no_signal')) - setAt,
      );
      const back = events.length;
      await hdmi({ signal: 'current' });
      await waitFor('the signal back', back, (s) => s.capture?.status === 'signal');
    }

    note(`gadget: ${RESOLUTION_FLIPS} resolution changes`);
    const resolution: number[] = [];
    for (let i = 0; i < RESOLUTION_FLIPS; i++) {
      const [timings, width] =
        i % 2 === 0 ? (['720x480p59', 720] as const) : (['640x480p59', 640] as const);
      const since = events.length;
      const setAt = await hdmi({ timings });
      const at = await waitFor(
        `the stream at ${timings}`,
        since,
        (s) =>
          s.capture?.status === 'signal' && s.source.resolution.width === width && s.h264.online,
      );
      resolution.push(at - setAt);
    }
    if (RESOLUTION_FLIPS % 2 === 1) await hdmi({ timings: '640x480p59' });

    note(`gadget: ${EDID_APPLIES} EDID applies`);
    const list = JSON.parse(
      (await vm.request('/api/upgrade/edid_list', { headers: { token } })).body,
    ) as Array<{ key: string; content: string }>;
    const edid: number[] = [];
    for (let i = 0; i < EDID_APPLIES; i++) {
      const preset = list.find((p) => p.key === (i % 2 === 0 ? 'E1920x1200' : 'E1920x1080'))!;
      const t0 = performance.now();
      const res = await vm.request('/api/upgrade/edid', {
        method: 'POST',
        headers: { token, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ edid: preset.content }).toString(),
      });
      if (res.status !== 200) throw new Error(`edid: ${res.status} ${res.body}`);
      edid.push(performance.now() - t0);
    }

    note('gadget: capture fps at 1920x1080 (the encoder stopped first)');
    ws.close();
    // nobody wants the encoder: it lingers 15 s, then lets go of the device
    const fpsReply = await (async () => {
      const deadline = performance.now() + 120_000;
      await hdmi({ timings: '1920x1080p60' });
      for (;;) {
        try {
          return await vm.command('capture-fps', { frames: CAPTURE_FRAMES }, 180_000);
        } catch (err) {
          if (!/busy/i.test((err as Error).message) || performance.now() > deadline) throw err;
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    })();
    if (fpsReply['width'] !== 1920 || fpsReply['height'] !== 1080) {
      throw new Error(
        `capture-fps read ${String(fpsReply['width'])}x${String(fpsReply['height'])}`,
      );
    }
    await hdmi({ timings: '640x480p59' });
    return {
      signal_change_to_state_ms: round(median(signal), 1),
      signal_change_samples: signal.length,
      resolution_change_to_stream_ms: Math.round(median(resolution)),
      resolution_change_samples: resolution.length,
      edid_apply_ms: Math.round(median(edid)),
      edid_apply_samples: edid.length,
      capture_fps: Number(fpsReply['fps']),
      video_vm_clock_bound_ms: round(clock.bound, 1),
    };
  } finally {
    ws.close();
  }
}
