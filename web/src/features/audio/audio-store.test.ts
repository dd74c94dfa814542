import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AudioState } from '@kvm/protocol/audio';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { USER_CONFIG_DEFAULTS } from '@kvm/protocol/settings';
import en from '../../i18n/en.json';
import { NetworkError } from '../../lib/api';
import { stubFetch } from '../../test/fetch-stub';
import { resetConfigForTests, useConfig } from '../config/config-store';
import {
  adoptServerMicOn,
  closeMutedTip,
  currentMicTrack,
  micStatus,
  onMicTrackChange,
  resetAudioForTests,
  setAudioDepsForTests,
  setMicOn,
  setMuted,
  showMutedTip,
  useAudio,
  volumeStatus,
  type AudioStoreState,
} from './audio-store';
import { enableMicrophone, type MicEnableDeps } from './mic-enable';
import { echoSetConfig } from '../../test/config';

function deviceState(patch: Partial<AudioState> = {}, mic: Partial<AudioState['mic']> = {}) {
  return {
    available: true,
    simulated: false,
    listeners: 0,
    mic: { enabled: true, available: true, active: false, ...mic },
    camera: { available: false, reason: 'the camera needs the hardware target' },
    ...patch,
  } satisfies AudioState;
}

function fakeTrack() {
  return { kind: 'audio', enabled: true, stop: vi.fn() } as unknown as MediaStreamTrack & {
    stop: ReturnType<typeof vi.fn>;
  };
}

function fakeStream(track: MediaStreamTrack): MediaStream {
  return { getAudioTracks: () => [track], getTracks: () => [track] } as unknown as MediaStream;
}

const flush = async () => {
  for (let i = 0; i < 5; i += 1) await new Promise((r) => setTimeout(r, 0));
};

function state(patch: Partial<AudioStoreState>): AudioStoreState {
  return { ...useAudio.getState(), ...patch };
}

describe('audio store', () => {
  beforeEach(() => {
    localStorage.clear();
    resetConfigForTests();
    resetAudioForTests();
  });
  afterEach(() => {
    resetAudioForTests();
    vi.unstubAllGlobals();
    vi.useRealTimers();
  });

  it('says what the volume and microphone controls show', () => {
    const device = deviceState();
    expect(volumeStatus(state({}))).toBe('unknown');
    expect(volumeStatus(state({ mode: 'direct_h264', device }))).toBe('direct');
    expect(volumeStatus(state({ device: deviceState({ available: false }) }))).toBe('unavailable');
    expect(volumeStatus(state({ device, features: { audio: false, mic: false } }))).toBe(
      'unavailable',
    );
    expect(volumeStatus(state({ device, muted: true }))).toBe('muted');
    expect(volumeStatus(state({ device, autoplayBlocked: true }))).toBe('blocked');
    expect(volumeStatus(state({ device }))).toBe('on');

    expect(micStatus(state({}))).toBe('unknown');
    expect(micStatus(state({ device, mode: 'direct_h264' }))).toBe('direct');
    expect(micStatus(state({ device: deviceState({}, { available: false }) }))).toBe('unavailable');
    expect(micStatus(state({ device: deviceState({}, { enabled: false }) }))).toBe('disabled');
    expect(micStatus(state({ device, enabling: true }))).toBe('enabling');
    expect(micStatus(state({ device, micOn: false }))).toBe('off');
    expect(micStatus(state({ device, micOn: true, micCapture: 'on' }))).toBe('on');
    expect(micStatus(state({ device, micOn: true, micCapture: 'denied' }))).toBe('denied');
  });

  it('captures the microphone when on; its track follows mute; off releases it', async () => {
    const track = fakeTrack();
    const getUserMedia = vi.fn(() => Promise.resolve(fakeStream(track)));
    setAudioDepsForTests({ media: () => ({ getUserMedia }), meterContext: () => null });
    const changes = vi.fn();
    onMicTrackChange(changes);
    useAudio.setState({ device: deviceState(), mode: 'webrtc' });

    setMicOn(true);
    expect(localStorage.getItem(STORAGE_KEYS.micOn)).toBe('true');
    await flush();
    expect(getUserMedia).toHaveBeenCalledWith({ audio: true, video: false });
    expect(useAudio.getState().micCapture).toBe('on');
    expect(currentMicTrack()).toBe(track);
    expect(changes).toHaveBeenCalledTimes(1);
    expect(track.enabled).toBe(true);

    // SPEC 4: the microphone track follows the muted setting (no renegotiation: no change call).
    setMuted(true);
    expect(track.enabled).toBe(false);
    setMuted(false);
    expect(track.enabled).toBe(true);
    expect(changes).toHaveBeenCalledTimes(1);

    setMicOn(false);
    expect(track.stop).toHaveBeenCalled();
    expect(currentMicTrack()).toBeNull();
    expect(changes).toHaveBeenCalledTimes(2);
    expect(micStatus(useAudio.getState())).toBe('off');
  });

  it('says microphone access denied, no capture device, getUserMedia unavailable', async () => {
    useAudio.setState({ device: deviceState(), mode: 'webrtc' });
    const refuse = (name: string) =>
      setAudioDepsForTests({
        media: () => ({
          getUserMedia: () => Promise.reject(new DOMException('no', name)),
        }),
      });
    refuse('NotAllowedError');
    setMicOn(true);
    await flush();
    expect(micStatus(useAudio.getState())).toBe('denied');
    expect(en.audio.mic.denied).toBe('Microphone access denied');

    refuse('NotFoundError');
    setMicOn(true); // on again after an error tries again
    await flush();
    expect(micStatus(useAudio.getState())).toBe('noDevice');
    expect(en.audio.mic.noDevice).toBe('No capture device');

    setAudioDepsForTests({ media: () => undefined });
    setMicOn(true);
    await flush();
    expect(micStatus(useAudio.getState())).toBe('unsupported');
  });

  it('captures nothing in direct H.264 mode or while the device has the mic disabled', async () => {
    const getUserMedia = vi.fn(() => Promise.resolve(fakeStream(fakeTrack())));
    setAudioDepsForTests({ media: () => ({ getUserMedia }) });
    useAudio.setState({ device: deviceState(), mode: 'direct_h264' });
    setMicOn(true);
    useAudio.setState({ device: deviceState({}, { enabled: false }), mode: 'webrtc' });
    await flush();
    expect(getUserMedia).not.toHaveBeenCalled();
  });

  it('the browser key mic_on wins over the server config; without one the config counts', () => {
    adoptServerMicOn(true);
    expect(useAudio.getState().micOn).toBe(true);
    localStorage.setItem(STORAGE_KEYS.micOn, 'false');
    resetAudioForTests();
    adoptServerMicOn(true);
    expect(useAudio.getState().micOn).toBe(false);
  });

  it('runs the enable flow: set_param, reboot, the device away and back enabled', async () => {
    const calls: string[] = [];
    let back = false;
    let away: () => void = () => undefined;
    const hold: { reconnect?: () => void } = {};
    const flow: MicEnableDeps = {
      setParam: () => {
        calls.push('set_param');
        return Promise.resolve();
      },
      reboot: () => {
        calls.push('reboot');
        // The server went down before its answer was out.
        return Promise.reject(new NetworkError('network'));
      },
      micEnabled: () => {
        calls.push('audio');
        return back ? Promise.resolve(true) : Promise.resolve(false);
      },
      wentAway: new Promise<void>((resolve) => {
        away = resolve;
      }),
      reconnected: () =>
        new Promise<void>((resolve) => {
          hold.reconnect = resolve;
        }),
      pollMs: 5,
      waitMs: 5_000,
    };
    const done = enableMicrophone(flow);
    expect(useAudio.getState().enabling).toBe(true);
    await vi.waitFor(() => expect(calls.filter((c) => c === 'audio').length).toBeGreaterThan(1));
    // Enabled before the device was seen going away is not the restart yet.
    back = true;
    await new Promise((r) => setTimeout(r, 20));
    expect(useAudio.getState().enabling).toBe(true);
    away();
    // Back and enabled: the toast waits for the console's reconnection.
    await vi.waitFor(() => expect(hold.reconnect).toBeDefined());
    await new Promise((r) => setTimeout(r, 20));
    expect(useAudio.getState().enabling).toBe(true);
    hold.reconnect?.();
    await done;
    expect(calls.slice(0, 2)).toEqual(['set_param', 'reboot']);
    expect(useAudio.getState().enabling).toBe(false);
  });

  it('the enable flow fails when set_param is refused, and gives up after its wait', async () => {
    const refused: MicEnableDeps = {
      setParam: () => Promise.reject(new Error('enable_mic parameter must be a boolean')),
      reboot: vi.fn(() => Promise.resolve()),
      micEnabled: () => Promise.resolve(false),
      wentAway: new Promise(() => undefined),
    };
    await expect(enableMicrophone(refused)).rejects.toThrow('enable_mic');
    expect(refused.reboot).not.toHaveBeenCalled();
    const never: MicEnableDeps = {
      ...refused,
      setParam: () => Promise.resolve(),
      micEnabled: () => Promise.reject(new NetworkError('network')),
      pollMs: 5,
      waitMs: 30,
    };
    await expect(enableMicrophone(never)).rejects.toThrow('did not come back');
    expect(useAudio.getState().enabling).toBe(false);
  });

  it('shows the muted-panel tip once and stores got_muted_panel_tip', async () => {
    const { requests } = stubFetch({
      '/api/system/set_config': echoSetConfig,
    });
    useConfig.setState({ config: { ...USER_CONFIG_DEFAULTS }, status: 'ready' });
    useAudio.setState({ device: deviceState(), mode: 'webrtc', receiving: true });
    expect(showMutedTip(useAudio.getState(), false)).toBe(false); // sound on: no tip
    useAudio.setState({ autoplayBlocked: true });
    expect(showMutedTip(useAudio.getState(), false)).toBe(true);
    expect(showMutedTip(useAudio.getState(), true)).toBe(false);
    closeMutedTip();
    closeMutedTip();
    expect(showMutedTip(useAudio.getState(), false)).toBe(false);
    await vi.waitFor(() => expect(requests).toHaveLength(1));
    expect(JSON.parse(requests[0]?.body ?? '{}')).toMatchObject({ got_muted_panel_tip: true });
  });
});
