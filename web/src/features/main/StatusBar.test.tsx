import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import type { AudioState } from '@kvm/protocol/audio';
import { USER_CONFIG_DEFAULTS } from '@kvm/protocol/settings';
import { NotifyProvider } from '../../components/notify';
import en from '../../i18n/en.json';
import { envelope, stubFetch, type Responder } from '../../test/fetch-stub';
import { flush, render, type Rendered } from '../../test/render';
import {
  remoteAudio,
  resetAudioForTests,
  setAudioDepsForTests,
  useAudio,
} from '../audio/audio-store';
import type { MeterContextLike } from '../audio/mic-meter';
import { resetConfigForTests, useConfig } from '../config/config-store';
import { IDLE, type VideoSnapshot } from '../video/video-controller';
import type * as VideoSession from '../video/video-session';
import { videoController } from '../video/video-session';
import { StatusBar } from './StatusBar';

/** The bar's own renders: it calls useStreamStatus once each (counted through the mock). */
const { barRenders } = vi.hoisted(() => ({ barRenders: { count: 0 } }));
vi.mock('../video/video-session', async (importOriginal) => {
  const actual = await importOriginal<typeof VideoSession>();
  return {
    ...actual,
    useStreamStatus: () => {
      barRenders.count += 1;
      return actual.useStreamStatus();
    },
  };
});

function device(mic: Partial<AudioState['mic']> = {}, patch: Partial<AudioState> = {}): AudioState {
  return {
    available: true,
    simulated: false,
    listeners: 1,
    mic: { enabled: true, available: true, active: false, ...mic },
    camera: { available: false, reason: 'needs the hardware target' },
    ...patch,
  };
}

async function waitFor(check: () => boolean, what: string, tries = 300) {
  for (let i = 0; i < tries; i += 1) {
    if (check()) return;
    await flush(1);
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function click(element: HTMLElement | null) {
  act(() => element?.click());
}

describe('StatusBar', () => {
  let view: Rendered | undefined;
  let audio: AudioState = device();
  const routes: Record<string, Responder> = {};
  beforeEach(() => {
    localStorage.clear();
    resetConfigForTests();
    resetAudioForTests();
    audio = device();
    for (const key of Object.keys(routes)) delete routes[key];
    routes['/api/audio'] = () => envelope(200, audio);
    stubFetch(routes);
  });
  afterEach(() => {
    view?.unmount();
    view = undefined;
    resetAudioForTests();
    vi.unstubAllGlobals();
    vi.restoreAllMocks();
  });

  async function show(state: Partial<ReturnType<typeof useAudio.getState>> = {}) {
    view = await render(
      <NotifyProvider>
        <StatusBar />
      </NotifyProvider>,
    );
    act(() => useAudio.setState({ device: audio, mode: 'webrtc', ...state }));
    return view;
  }

  const attr = (id: string, name: string) => view?.byTestId(id)?.getAttribute(name) ?? null;

  it('keeps status-stream and says inactive while nothing plays', async () => {
    await show();
    const item = view?.byTestId('status-stream');
    expect(item?.textContent).toBe(`${en.status.stream}: ${en.status.inactive}`);
    expect(item?.dataset['status']).toBe('inactive');
    expect(view?.byTestId('status-stream-info')).toBeNull();
  });

  it('a new stream info renders only its own text, not the bar (each second while video plays)', async () => {
    let snapshot: VideoSnapshot = {
      ...IDLE,
      requestedMode: 'webrtc',
      mode: 'webrtc',
      state: 'active',
      info: { bitrateKbps: 850, fps: 60, connection: 'p2p' },
    };
    const listeners = new Set<() => void>();
    vi.spyOn(videoController, 'getSnapshot').mockImplementation(() => snapshot);
    vi.spyOn(videoController, 'subscribe').mockImplementation((l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    });
    await show();
    const info = () => view?.byTestId('status-stream-info')?.textContent ?? '';
    expect(info()).toContain('850');
    const before = barRenders.count;
    act(() => {
      snapshot = { ...snapshot, info: { bitrateKbps: 920, fps: 59, connection: 'p2p' } };
      for (const l of [...listeners]) l();
    });
    await waitFor(() => info().includes('920'), 'the new stream info');
    expect(info()).toContain('59');
    expect(barRenders.count).toBe(before);
    // the state is the bar's: it renders again for that
    act(() => {
      snapshot = { ...snapshot, state: 'connecting' };
      for (const l of [...listeners]) l();
    });
    await waitFor(() => view?.byTestId('status-stream-info') === null, 'the info gone');
    expect(barRenders.count).toBeGreaterThan(before);
  });

  it('volume: on, muted by a click, level remembered; none in direct H.264', async () => {
    await show();
    expect(attr('audio-volume', 'data-state')).toBe('on');
    click(view?.byTestId('audio-volume') ?? null);
    expect(attr('audio-volume', 'data-state')).toBe('muted');
    expect(view?.byTestId('audio-volume')?.textContent).toContain(en.audio.muted);

    const level = view?.byTestId('audio-level') as HTMLInputElement;
    act(() => {
      const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')?.set;
      setter?.call(level, '35');
      level.dispatchEvent(new Event('input', { bubbles: true }));
    });
    expect(useAudio.getState().volume).toBe(0.35);
    expect(localStorage.getItem('kvm_audio_volume')).toBe('0.35');

    act(() => useAudio.setState({ mode: 'direct_h264' }));
    expect(attr('audio-volume', 'data-state')).toBe('direct');
    expect(view?.byTestId('audio-volume')?.hasAttribute('disabled')).toBe(true);
    expect(view?.byTestId('audio-level')?.hasAttribute('disabled')).toBe(true);
    expect(attr('audio-mic', 'data-state')).toBe('direct');
    expect(attr('audio-volume', 'aria-label')).toBe(en.audio.direct);
    // Fallen back from WebRTC: the control says the fallback cost the sound.
    act(() => useAudio.setState({ fallback: true }));
    expect(attr('audio-volume', 'aria-label')).toBe(en.audio.directFallback);
  });

  it('microphone: off → on with a meter → off; denied says so', async () => {
    const track = { kind: 'audio', enabled: true, stop: vi.fn() } as unknown as MediaStreamTrack;
    const stream = {
      getAudioTracks: () => [track],
      getTracks: () => [track],
    } as unknown as MediaStream;
    const context: MeterContextLike = {
      createMediaStreamSource: () => ({ connect: () => undefined, disconnect: () => undefined }),
      createAnalyser: () => ({
        fftSize: 0,
        smoothingTimeConstant: 0,
        frequencyBinCount: 16,
        getByteFrequencyData: (a: Uint8Array) => a.fill(128),
      }),
      close: () => Promise.resolve(),
    };
    setAudioDepsForTests({
      media: () => ({ getUserMedia: () => Promise.resolve(stream) }),
      meterContext: () => context,
    });
    await show();
    expect(attr('audio-mic', 'data-state')).toBe('off');
    expect(view?.byTestId('audio-mic-meter')).toBeNull();
    click(view?.byTestId('audio-mic') ?? null);
    await waitFor(() => attr('audio-mic', 'data-state') === 'on', 'the mic on');
    await waitFor(() => attr('audio-mic-meter', 'data-level') === '0.5', 'the meter');
    click(view?.byTestId('audio-mic') ?? null);
    expect(attr('audio-mic', 'data-state')).toBe('off');
    expect(track.stop).toHaveBeenCalled();

    setAudioDepsForTests({
      media: () => ({
        getUserMedia: () => Promise.reject(new DOMException('x', 'NotAllowedError')),
      }),
    });
    click(view?.byTestId('audio-mic') ?? null);
    await waitFor(() => attr('audio-mic', 'data-state') === 'denied', 'the refusal');
    expect(view?.byTestId('audio-mic')?.textContent).toContain('Microphone access denied');
  });

  it('camera: unavailable with the reason', async () => {
    await show();
    expect(attr('audio-camera', 'data-state')).toBe('unavailable');
    expect(attr('audio-camera', 'data-reason')).toBe('needs the hardware target');
    expect(view?.byTestId('audio-camera')?.textContent).toContain(en.audio.camera.unavailable);
  });

  it('microphone enable flow: confirm → set_param → reboot → back → toast', async () => {
    audio = device({ enabled: false });
    let rebooted = false;
    let downOnce = false;
    routes['/api/system/set_param'] = () => envelope(200, {});
    routes['/api/upgrade/reboot'] = () => {
      rebooted = true;
      return envelope(200, { status: 'Reboot started' });
    };
    routes['/api/audio'] = () => {
      if (!rebooted) return envelope(200, audio);
      if (!downOnce) {
        downOnce = true; // the device is away once, then back with the microphone enabled
        return Promise.reject(new TypeError('Failed to fetch'));
      }
      return envelope(200, device({ enabled: true }));
    };
    const { requests } = stubFetch(routes);
    await show();
    expect(attr('audio-mic', 'data-state')).toBe('disabled');
    click(view?.byTestId('audio-mic') ?? null);
    await waitFor(() => view?.byTestId('audio-mic-enable-confirm') != null, 'the dialog');
    expect(document.body.textContent).toContain(en.audio.mic.enableConfirm);
    click(view?.byTestId('audio-mic-enable-confirm') ?? null);
    await waitFor(() => attr('audio-mic', 'data-state') === 'enabling', 'enabling');
    await waitFor(
      () => document.body.textContent?.includes(en.audio.mic.enabled) === true,
      'toast',
    );
    const setParam = requests.find((r) => r.path === '/api/system/set_param');
    expect(setParam?.method).toBe('POST');
    expect(setParam?.query.get('enable_mic')).toBe('1');
    const order = requests.map((r) => r.path).filter((p) => p !== '/api/audio');
    expect(order).toEqual(['/api/system/set_param', '/api/upgrade/reboot']);
    expect(attr('audio-mic', 'data-state')).toBe('off');
  });

  it('shows the muted-panel tip once and stores got_muted_panel_tip', async () => {
    routes['/api/system/set_config'] = (req) =>
      envelope(200, { config: JSON.parse(req.body ?? '{}') as unknown });
    const { requests } = stubFetch(routes);
    useConfig.setState({ config: { ...USER_CONFIG_DEFAULTS }, status: 'ready' });
    await show({ receiving: true });
    expect(view?.byTestId('audio-muted-tip')).toBeNull();
    // The user's own mute click: no tip telling them how.
    click(view?.byTestId('audio-volume') ?? null);
    expect(attr('audio-volume', 'data-state')).toBe('muted');
    await flush();
    expect(view?.byTestId('audio-muted-tip')).toBeNull();
    // A page that loads muted (the remembered setting) shows it.
    view?.unmount();
    act(() => useAudio.setState({ tipClosed: false }));
    await show({ receiving: true, muted: true });
    await waitFor(() => view?.byTestId('audio-muted-tip') != null, 'the tip');
    expect(view?.byTestId('audio-muted-tip')?.textContent).toContain(en.audio.mutedTip);
    const gotIt = view?.byTestId('audio-muted-tip')?.querySelector('button') ?? null;
    click(gotIt);
    await waitFor(() => requests.some((r) => r.path === '/api/system/set_config'), 'the save');
    expect(useConfig.getState().config?.got_muted_panel_tip).toBe(true);
    // Another page load, muted again: the server config says it was shown.
    view?.unmount();
    act(() => useAudio.setState({ tipClosed: false }));
    await show({ receiving: true, muted: true });
    await flush();
    expect(view?.byTestId('audio-muted-tip')).toBeNull();
  });

  it('a refused autoplay blocks only the sound: the video keeps playing', async () => {
    const plays: string[] = [];
    vi.spyOn(HTMLMediaElement.prototype, 'play').mockImplementation(function (
      this: HTMLMediaElement,
    ) {
      plays.push(this.tagName);
      return this.tagName === 'AUDIO'
        ? Promise.reject(new DOMException('needs a gesture', 'NotAllowedError'))
        : Promise.resolve();
    });
    const pause = vi.spyOn(HTMLMediaElement.prototype, 'pause');
    view = await render(
      <NotifyProvider>
        <video data-testid="video" muted autoPlay />
        <StatusBar />
      </NotifyProvider>,
    );
    act(() => useAudio.setState({ device: audio, mode: 'webrtc', receiving: true }));
    const video = view.byTestId('video') as HTMLVideoElement;
    await act(() => video.play());
    act(() => remoteAudio.setTrack({ kind: 'audio', enabled: true } as MediaStreamTrack));
    await waitFor(() => attr('audio-volume', 'data-state') === 'blocked', 'blocked');
    expect(plays).toEqual(['VIDEO', 'AUDIO']);
    expect(pause).not.toHaveBeenCalled();
    // The user has not seen the tip: it tells how to get the sound.
    act(() => useConfig.setState({ config: { ...USER_CONFIG_DEFAULTS }, status: 'ready' }));
    await waitFor(() => view?.byTestId('audio-muted-tip') != null, 'the tip');

    // The first click anywhere plays the sound.
    vi.spyOn(HTMLMediaElement.prototype, 'play').mockImplementation(() => Promise.resolve());
    act(() => window.dispatchEvent(new Event('pointerdown')));
    await waitFor(() => attr('audio-volume', 'data-state') === 'on', 'sound on');
  });
});
