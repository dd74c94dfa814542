import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NotifyProvider } from '../../components/notify';
import en from '../../i18n/en.json';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { flush, render, type Rendered } from '../../test/render';
import { resetConfigForTests } from '../config/config-store';
import { resetStreamerForTests } from './streamer-store';
import { VideoView } from './VideoView';
import { videoController } from './video-session';
import { setConfig } from '../../test/config';

/** Polls until `check` holds, for up to 10 s (a loaded machine takes a while for a first import). */
async function waitFor(check: () => boolean, what: string) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (check()) return;
    await flush(1);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('VideoView (in happy-dom: no WebRTC, no WebCodecs)', () => {
  let view: Rendered | undefined;
  beforeEach(() => {
    resetConfigForTests();
    resetStreamerForTests();
    stubFetch({
      '/api/streamer': () => envelope(200, {}),
      '/api/turn/get_turn': () => envelope(404, { error: 'NotFoundError', error_msg: '' }),
    });
  });
  afterEach(() => {
    view?.unmount();
    view = undefined;
    videoController.stop();
    vi.unstubAllGlobals();
  });

  it('shows the direct canvas, rotated, cursor hidden, with mode and frame count', async () => {
    setConfig({ video_mode: 'direct_h264', orientation: 90, show_cursor: false });
    view = await render(
      <NotifyProvider>
        <VideoView />
      </NotifyProvider>,
    );
    await waitFor(() => view?.byTestId('video-direct') !== null, 'the canvas');
    const canvas = view.byTestId('video-direct');
    expect(canvas?.tagName).toBe('CANVAS');
    expect(canvas?.dataset['mode']).toBe('direct_h264');
    expect(canvas?.dataset['frames']).toBe('0');
    expect(canvas?.dataset['realWidth']).toBe('640'); // nothing decoded: 640x480
    expect(canvas?.style.transform).toBe('rotate(90deg)');
    expect(canvas?.style.cursor).toBe('none');
    // WebCodecs is missing here: the view says why there is no picture.
    await waitFor(() => view?.byTestId('video-unsupported') !== null, 'the notice');
    expect(view.byTestId('video-unsupported')?.textContent).toBe(en.video.directUnsupported);
  });

  it('shows the WebRTC <video> when the setting says webrtc', async () => {
    // (janus.js itself cannot load here: vitest gives its UMD wrapper a CommonJS `module`.)
    setConfig({ video_mode: 'webrtc' });
    view = await render(
      <NotifyProvider>
        <VideoView />
      </NotifyProvider>,
    );
    const video = view.byTestId('video-webrtc') as HTMLVideoElement | null;
    expect(video?.tagName).toBe('VIDEO');
    expect(video?.dataset['mode']).toBe('webrtc');
    expect(video?.dataset['frames']).toBe('0');
    expect(video?.muted).toBe(true);
    expect(video?.style.transform).toBe('');
    expect(view.byTestId('main-screen')).toBeNull(); // the page keeps that id on its container
    expect(view.byTestId('video-area')?.dataset['mode']).toBe('webrtc');
    expect(videoController.getSnapshot().requestedMode).toBe('webrtc');
  });
});
