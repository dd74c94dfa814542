import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import type { AudioState } from '@kvm/protocol/audio';
import { NotifyProvider } from '../../components/notify';
import en from '../../i18n/en.json';
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
});
