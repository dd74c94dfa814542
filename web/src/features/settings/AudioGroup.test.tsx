import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import type { AudioState } from '@kvm/protocol/audio';
import { NotifyProvider } from '../../components/notify';
import en from '../../i18n/en.json';
import zh from '../../i18n/zh.json';
import { i18n } from '../../i18n';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { render, type Rendered } from '../../test/render';
import { resetAudioForTests, useAudio } from '../audio/audio-store';
import { AudioGroup } from './AudioGroup';

const STATE: AudioState = {
  available: true,
  simulated: true,
  listeners: 0,
  mic: { enabled: false, available: true, active: false },
  camera: { available: false, reason: 'needs the hardware target' },
};

describe('AudioGroup', () => {
  let view: Rendered | undefined;
  beforeEach(() => {
    resetAudioForTests();
    stubFetch({ '/api/audio': () => envelope(200, STATE) });
  });
  afterEach(() => {
    view?.unmount();
    resetAudioForTests();
    vi.unstubAllGlobals();
  });

  it('shows volume, the microphone to enable and the camera with its reason', async () => {
    view = await render(
      <NotifyProvider>
        <AudioGroup />
      </NotifyProvider>,
    );
    act(() => useAudio.setState({ device: STATE, mode: 'webrtc' }));
    expect(view.byTestId('settings-group-audio')).not.toBeNull();
    expect(view.byTestId('settings-audio-volume')?.getAttribute('data-state')).toBe('on');
    expect(view.byTestId('settings-audio-level')).not.toBeNull();
    expect(view.byTestId('settings-audio-mic')?.getAttribute('data-state')).toBe('disabled');
    expect(view.byTestId('settings-audio-camera')?.textContent).toContain(
      'needs the hardware target',
    );
    expect(view.byTestId('settings-group-audio')?.textContent).toContain(en.audio.simulatedTip);
    // The status bar's ids stay unique on the page.
    expect(view.byTestId('audio-volume')).toBeNull();
  });

  it("translates the server's camera code (the Chinese console shows no English reason)", async () => {
    view = await render(
      <NotifyProvider>
        <AudioGroup />
      </NotifyProvider>,
    );
    const coded: AudioState = {
      ...STATE,
      camera: { available: false, reason: 'The testbed has no camera input', code: 'testbed' },
    };
    act(() => useAudio.setState({ device: coded, mode: 'webrtc' }));
    expect(view.byTestId('settings-audio-camera')?.textContent).toContain(
      en.audio.camera.reason.testbed,
    );
    await act(() => i18n.changeLanguage('zh'));
    try {
      const text = view.byTestId('settings-audio-camera')?.textContent ?? '';
      expect(text).toContain(zh.audio.camera.reason.testbed);
      expect(text).not.toContain('testbed');
      expect(view.byTestId('settings-audio-camera')?.dataset['reasonCode']).toBe('testbed');
    } finally {
      await act(() => i18n.changeLanguage('en'));
    }
  });
});
