import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { NotifyProvider } from '../../components/notify';
import en from '../../i18n/en.json';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { flush, render, type Rendered } from '../../test/render';
import { resetConfigForTests } from '../config/config-store';
import { resetStreamerForTests } from '../video/streamer-store';
import { VideoGroup } from './VideoGroup';
import { setConfig } from '../../test/config';

describe('VideoGroup', () => {
  let view: Rendered | undefined;
  beforeEach(() => {
    resetConfigForTests();
    resetStreamerForTests();
  });
  afterEach(() => {
    view?.unmount();
    vi.unstubAllGlobals();
  });

  function typeInto(input: HTMLInputElement, value: string) {
    const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')?.set;
    act(() => {
      setter?.call(input, value);
      input.dispatchEvent(new Event('input', { bubbles: true }));
    });
  }

  it('refuses a negative custom bitrate and sends a valid one', async () => {
    const { requests } = stubFetch({
      '/api/streamer/set_params': () => envelope(200, {}),
    });
    setConfig({});
    view = await render(
      <NotifyProvider>
        <VideoGroup />
      </NotifyProvider>,
    );
    expect(view.byTestId('settings-group-video')).not.toBeNull();
    for (const id of [
      'quality-LOW',
      'quality-ULTRA_HIGH',
      'video-mode-webrtc',
      'video-mode-direct_h264',
    ]) {
      expect(view.byTestId(id), id).not.toBeNull();
    }
    const input = view.byTestId('custom-bitrate') as HTMLInputElement;
    typeInto(input, '-5');
    act(() => view?.byTestId('custom-bitrate-apply')?.click());
    await flush();
    expect(view.byTestId('custom-bitrate-error')?.textContent).toBe(
      en.settings.video.mustBeNonNegative,
    );
    expect(requests).toHaveLength(0);

    typeInto(input, '1500');
    act(() => view?.byTestId('custom-bitrate-apply')?.click());
    await flush();
    expect(view.byTestId('custom-bitrate-error')).toBeNull();
    expect(requests[0]?.path).toBe('/api/streamer/set_params');
    expect(requests[0]?.query.get('h264_bitrate')).toBe('1500');
    expect(requests[0]?.query.get('h264_gop')).toBe('30'); // MEDIUM's gop goes along
  });
});
