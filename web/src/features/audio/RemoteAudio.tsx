import { useEffect, useRef } from 'react';
import { remoteAudio, useAudio } from './audio-store';
import './audio-session';

/**
 * The remote computer's sound: its own hidden <audio>, apart from the muted autoplaying
 * <video>, so a browser that refuses sound before a gesture never stops the picture.
 */
export function RemoteAudio() {
  const ref = useRef<HTMLAudioElement>(null);
  const muted = useAudio((s) => s.muted);
  const volume = useAudio((s) => s.volume);
  useEffect(() => {
    remoteAudio.setVolume(useAudio.getState().volume);
    remoteAudio.setMuted(useAudio.getState().muted);
    remoteAudio.attach(ref.current);
    return () => remoteAudio.attach(null);
  }, []);
  return (
    <audio
      ref={ref}
      data-testid="remote-audio"
      data-muted={muted ? 'true' : 'false'}
      data-volume={volume}
      autoPlay
      playsInline
      style={{ display: 'none' }}
    />
  );
}
