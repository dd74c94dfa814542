import {
  useEffect,
  useLayoutEffect,
  useRef,
  useState,
  type CSSProperties,
  type RefObject,
} from 'react';
import { CloseOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { StackedNotice } from '../../components/NoticeStack';
import { useMessage } from '../../components/notify';
import { setStreamWanted } from '../connection/connection';
import { useInputCapture } from '../input/input-capture';
import { useConfig } from '../config/config-store';
import { computeGeometry, rotationTransform, type Size } from '../../lib/geometry';
import { latencyReadout, startClockSync, watchWebRtcLatency } from './latency-readout';
import { loadStreamer } from './streamer-store';
import { canvasHasPicture, PICTURE_WAIT_FRAMES } from './first-frame-preview';
import {
  firstFramePreview,
  useRequestedVideoMode,
  useVideoPart,
  videoController,
} from './video-session';

/** data-frames is rewritten at most this often (the e2e reads it for liveness). */
export const FRAMES_ATTRIBUTE_MS = 250;

/** Size of an element, kept current by a ResizeObserver. */
function useElementSize(ref: RefObject<HTMLElement | null>): Size {
  const [size, setSize] = useState<Size>({ width: 0, height: 0 });
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    const measure = () => {
      const width = element.clientWidth;
      const height = element.clientHeight;
      setSize((s) => (s.width === width && s.height === height ? s : { width, height }));
    };
    measure();
    if (typeof ResizeObserver === 'undefined') {
      window.addEventListener('resize', measure);
      return () => window.removeEventListener('resize', measure);
    }
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, [ref]);
  return size;
}

/** In the notice stack (components/NoticeStack): never over another notice. */
const noticeStyle: CSSProperties = {
  display: 'flex',
  alignItems: 'flex-start',
  gap: 8,
  padding: '4px 8px 4px 12px',
  borderRadius: 4,
  background: 'rgba(250, 173, 20, 0.92)',
  color: '#000',
  fontSize: 13,
};

/**
 * SPEC 2 main screen: the remote screen as <video> (WebRTC) or <canvas> (direct H.264), fitted
 * into the area with letterboxing and rotated by the orientation setting.
 */
export function VideoView() {
  const { t } = useTranslation();
  const message = useMessage();
  const requestedMode = useRequestedVideoMode();
  const orientation = useConfig((s) => s.config?.orientation ?? 0);
  const showCursor = useConfig((s) => s.config?.show_cursor ?? true);
  // each part alone: the stream info's updates (each second) do not render the view again
  const mode = useVideoPart((v) => v.mode);
  const track = useVideoPart((v) => v.track);
  const direct = useVideoPart((v) => v.direct);
  const fallback = useVideoPart((v) => v.fallback);
  const retrying = useVideoPart((v) => v.retrying);
  const unsupported = useVideoPart((v) => v.unsupported);
  const state = useVideoPart((v) => v.state);
  const handover = useVideoPart((v) => v.handover);
  const areaRef = useRef<HTMLDivElement>(null);
  const videoRef = useRef<HTMLVideoElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const area = useElementSize(areaRef);
  // Keyboard and mouse of the remote computer (SPEC 2): captured on the area.
  useInputCapture(areaRef);
  const [webrtcSize, setWebrtcSize] = useState<Size | null>(null);
  const [directSize, setDirectSize] = useState<Size | null>(null);
  // The fallback notice can be dismissed; a new fallback shows it again.
  const [noticeClosed, setNoticeClosed] = useState(false);
  const [noticeFor, setNoticeFor] = useState(fallback);
  if (noticeFor !== fallback) {
    setNoticeFor(fallback);
    setNoticeClosed(false);
  }

  // This console is a stream client while the remote screen shows (the encoder pre-starts).
  useEffect(() => {
    setStreamWanted(true);
    void loadStreamer();
  }, []);

  // The setting picks the client; a change switches live.
  useEffect(() => {
    if (requestedMode) videoController.start(requestedMode);
  }, [requestedMode]);
  useEffect(() => () => videoController.stop(), []);
  // The first frame preview (first-frame-preview.ts) covers this view's place until it shows.
  useEffect(() => {
    firstFramePreview.viewMount();
    return () => firstFramePreview.viewUnmount();
  }, []);

  // SPEC 4/8: stream errors show as info messages.
  useEffect(
    () =>
      videoController.onMessage((m) => {
        void message.info(t('video.streamError', { code: m.code, error: m.text }));
      }),
    [message, t],
  );

  // WebRTC: the track plays in the <video>.
  useEffect(() => {
    const element = videoRef.current;
    if (!element || mode !== 'webrtc') return;
    if (!track) {
      element.srcObject = null;
      return;
    }
    element.srcObject = new MediaStream([track]);
    element.play().catch(() => undefined); // Muted autoplay is allowed; a refusal is harmless.
    return () => {
      element.srcObject = null;
    };
  }, [mode, track]);

  // The latency readout (latency-readout.ts): the device's clock while a video runs, and
  // every presented frame dated against it.
  useEffect(() => (mode ? startClockSync() : undefined), [mode]);
  useEffect(() => {
    const element = videoRef.current;
    if (!element || mode !== 'webrtc' || !track) return;
    return watchWebRtcLatency(element);
  }, [mode, track]);

  // Direct: frames are drawn on the canvas; its size follows the decoded pictures.
  useEffect(() => {
    const canvas = canvasRef.current;
    if (!direct || !canvas) return;
    // The canvas shows a picture (its first frame, or the preview's copied onto it): the first
    // frame preview goes once the worker's drawing has reached the page, checked each frame.
    let raf: number | undefined;
    const offPainted = direct.on('painted', (e) => {
      if (e.canvas !== canvas || raf !== undefined) return;
      let frames = 0;
      const check = () => {
        const shown =
          !firstFramePreview.showing || canvasHasPicture(canvas) || ++frames >= PICTURE_WAIT_FRAMES;
        if (shown) {
          firstFramePreview.viewPresented();
        } else {
          raf = requestAnimationFrame(check);
        }
      };
      raf = requestAnimationFrame(check);
    });
    direct.attachCanvas(canvas);
    const size = direct.getSize();
    setDirectSize(size.width > 0 ? size : null);
    const off = direct.on('resize', (s) => setDirectSize(s));
    const offLatency = direct.on('latency', (f) =>
      latencyReadout.note('direct_h264', f.capturedAt, f.shownAt, { liveFrom: f.liveFrom }),
    );
    return () => {
      off();
      offLatency();
      offPainted();
      if (raf !== undefined) cancelAnimationFrame(raf);
      latencyReadout.reset();
      direct.attachCanvas(null);
    };
  }, [direct]);

  // Liveness for tests: data-frames, at most every 250 ms.
  useEffect(() => {
    if (mode === 'webrtc') {
      const element = videoRef.current;
      if (!element) return;
      // requestVideoFrameCallback counts presented frames; without it (old Firefox), the
      // playback quality's total is the next best thing.
      const hasCallback = typeof element.requestVideoFrameCallback === 'function';
      // presentedFrames starts over with every new track (a reconnect): keep the count rising.
      let presented = 0;
      let before = 0;
      let last = 0;
      let handle: number | undefined;
      const onFrame: VideoFrameRequestCallback = (_now, metadata) => {
        if (metadata.presentedFrames < last) before += last;
        last = metadata.presentedFrames;
        presented = before + last;
        // A WebRTC frame is on screen: a handover from direct H.264 can end direct now, and
        // the first frame preview.
        videoController.webrtcPresented();
        firstFramePreview.viewPresented();
        handle = element.requestVideoFrameCallback(onFrame);
      };
      if (hasCallback) handle = element.requestVideoFrameCallback(onFrame);
      const timer = setInterval(() => {
        const frames = hasCallback
          ? presented
          : (element.getVideoPlaybackQuality?.().totalVideoFrames ?? 0);
        element.dataset['frames'] = String(frames);
        if (frames > 0) {
          videoController.webrtcPresented();
          firstFramePreview.viewPresented();
        }
      }, FRAMES_ATTRIBUTE_MS);
      return () => {
        clearInterval(timer);
        if (handle !== undefined) element.cancelVideoFrameCallback(handle);
      };
    }
    if (mode === 'direct_h264' && direct) {
      const canvas = canvasRef.current;
      if (!canvas) return;
      const timer = setInterval(() => {
        canvas.dataset['frames'] = String(direct.framesDrawn);
      }, FRAMES_ATTRIBUTE_MS);
      return () => clearInterval(timer);
    }
    return undefined;
  }, [mode, direct]);

  // During a handover the canvas still shows: until the video knows its size, use the canvas's.
  const real = mode === 'webrtc' ? (webrtcSize ?? directSize) : directSize;
  const geometry = computeGeometry(real, area, orientation);
  const elementStyle: CSSProperties = {
    position: 'absolute',
    left: geometry.left,
    top: geometry.top,
    width: geometry.viewWidth,
    height: geometry.viewHeight,
    transform: rotationTransform(orientation),
    transformOrigin: 'center center',
    cursor: showCursor ? undefined : 'none',
    background: '#000',
    display: 'block',
  };
  const onVideoSize = (element: HTMLVideoElement) => {
    if (element.videoWidth > 0 && element.videoHeight > 0) {
      setWebrtcSize({ width: element.videoWidth, height: element.videoHeight });
    }
  };

  const statusText =
    state === 'active'
      ? null
      : state === 'connecting' || state === 'attached' || state === 'watching'
        ? t('video.connecting')
        : t('main.noVideo');

  return (
    <div
      ref={areaRef}
      data-testid="video-area"
      data-mode={mode ?? ''}
      data-state={state}
      data-fallback={fallback ? 'true' : 'false'}
      data-handover={handover ? 'true' : 'false'}
      data-orientation={orientation}
      style={{
        position: 'relative',
        flex: 1,
        alignSelf: 'stretch',
        overflow: 'hidden',
        minWidth: 0,
        cursor: showCursor ? undefined : 'none',
      }}
    >
      {mode === 'webrtc' && (
        <video
          ref={videoRef}
          data-testid="video-webrtc"
          data-mode="webrtc"
          data-frames="0"
          data-real-width={geometry.realWidth}
          data-real-height={geometry.realHeight}
          autoPlay
          muted
          playsInline
          disablePictureInPicture
          onLoadedMetadata={(e) => onVideoSize(e.currentTarget)}
          onResize={(e) => onVideoSize(e.currentTarget)}
          style={elementStyle}
        />
      )}
      {/* After the video: during a handover (both run) the canvas stays on top until the
          WebRTC video presents its first frame. */}
      {(mode === 'direct_h264' || direct) && (
        <canvas
          ref={canvasRef}
          data-testid="video-direct"
          data-mode="direct_h264"
          data-frames="0"
          data-real-width={geometry.realWidth}
          data-real-height={geometry.realHeight}
          style={elementStyle}
        />
      )}
      {statusText && (
        <div
          data-testid="video-status"
          style={{
            position: 'absolute',
            inset: 0,
            display: 'flex',
            alignItems: 'center',
            justifyContent: 'center',
            color: '#8c8c8c',
            pointerEvents: 'none',
          }}
        >
          {statusText}
        </div>
      )}
      {unsupported ? (
        <StackedNotice>
          <div data-testid="video-unsupported" role="alert" style={noticeStyle}>
            {t('video.directUnsupported')}
          </div>
        </StackedNotice>
      ) : (
        fallback &&
        !noticeClosed && (
          <StackedNotice>
            <div data-testid="video-fallback-notice" role="status" style={noticeStyle}>
              <div>
                <div>{t('video.fallbackNotice')}</div>
                {/* Direct H.264 carries no sound (and takes no microphone): say what it costs. */}
                <div data-testid="video-fallback-no-sound" style={{ fontWeight: 600 }}>
                  {t('video.fallbackNoSound')}
                </div>
                {retrying && (
                  <div data-testid="video-fallback-retrying">{t('video.fallbackRetrying')}</div>
                )}
              </div>
              <button
                type="button"
                aria-label={t('video.dismiss')}
                onClick={() => setNoticeClosed(true)}
                style={{ border: 0, background: 'transparent', cursor: 'pointer', padding: 4 }}
              >
                <CloseOutlined />
              </button>
            </div>
          </StackedNotice>
        )
      )}
    </div>
  );
}
