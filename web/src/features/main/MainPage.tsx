import { VideoView } from '../video/VideoView';

/** SPEC 2 main page: the remote screen. */
export default function MainPage() {
  return (
    <div data-testid="main-page" style={{ height: '100%', display: 'flex' }}>
      <div
        data-testid="main-screen"
        style={{
          flex: 1,
          display: 'flex',
          background: '#000',
          minWidth: 0,
          minHeight: 0,
        }}
      >
        <VideoView />
      </div>
    </div>
  );
}
