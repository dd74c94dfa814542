import { afterEach, describe, expect, it } from 'vitest';
import { act } from 'react';
import type { CaptureState, StreamerState } from '@kvm/protocol/streamer';
import { i18n } from '../../i18n';
import { render, type Rendered } from '../../test/render';
import { CaptureStatus } from './CaptureStatus';
import { useStreamer } from './streamer-store';

const SIGNAL: CaptureState = {
  device: '/dev/video0',
  kind: 'dv',
  status: 'signal',
  width: 1920,
  height: 1080,
  hz: 59.94,
  format: 'uyvy422',
  error: null,
};

function withCapture(capture: CaptureState | undefined): void {
  const streamer = capture ? { capture } : {};
  act(() => useStreamer.setState({ state: { streamer } as unknown as StreamerState }));
}

describe('CaptureStatus', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    useStreamer.setState({ state: null });
    void i18n.changeLanguage('en');
  });

  it('shows the DV timings while there is a picture, and what the receiver says otherwise', async () => {
    view = await render(<CaptureStatus />);
    expect(view.byTestId('status-capture')).toBeNull(); // not a capture device: nothing
    withCapture(SIGNAL);
    const el = (): HTMLElement => view!.byTestId('status-capture')!;
    expect(el().textContent).toBe('HDMI: 1920x1080 59.94 Hz');
    expect(el().getAttribute('data-resolution')).toBe('1920x1080');
    withCapture({
      ...SIGNAL,
      status: 'no_lock',
      error: 'An HDMI signal the receiver cannot lock onto',
    });
    expect(el().textContent).toBe('HDMI: No lock');
    expect(el().getAttribute('data-status')).toBe('no_lock');
    expect(el().getAttribute('title')).toBe('An HDMI signal the receiver cannot lock onto');
    withCapture({
      ...SIGNAL,
      status: 'no_device',
      error: '/dev/video0 does not exist (unplugged?)',
    });
    expect(el().textContent).toBe('HDMI: No capture device');
    await act(() => i18n.changeLanguage('zh'));
    expect(el().textContent).toBe('HDMI: 无采集设备');
  });
});
