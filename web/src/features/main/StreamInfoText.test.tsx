import { afterEach, describe, expect, it } from 'vitest';
import en from '../../i18n/en.json';
import { connectionTypeFromStats } from '../../lib/rtc-stats';
import { render, type Rendered } from '../../test/render';
import { StreamInfoText } from './StatusBar';

/** A stats report whose selected pair has these local and remote candidate types. */
function report(local: string, remote: string): Map<string, unknown> {
  return new Map<string, unknown>([
    ['t', { id: 't', type: 'transport', selectedCandidatePairId: 'p' }],
    ['p', { id: 'p', type: 'candidate-pair', localCandidateId: 'l', remoteCandidateId: 'r' }],
    ['l', { id: 'l', type: 'local-candidate', candidateType: local }],
    ['r', { id: 'r', type: 'remote-candidate', candidateType: remote }],
  ]);
}

let view: Rendered | undefined;
afterEach(() => {
  view?.unmount();
  view = undefined;
});

describe('stream info: connection type (SPEC 3, issue 25)', () => {
  it('says Relay when the selected pair goes through TURN, P2P otherwise', async () => {
    for (const [local, remote, text] of [
      ['relay', 'host', en.video.info.relay],
      ['srflx', 'relay', en.video.info.relay],
      ['host', 'host', en.video.info.p2p],
      ['srflx', 'prflx', en.video.info.p2p],
    ] as const) {
      const connection = connectionTypeFromStats(report(local, remote));
      view = await render(<StreamInfoText info={{ bitrateKbps: 2500, fps: 30, connection }} />);
      expect(view.byTestId('status-stream-info')?.textContent).toBe(`2.5 Mbps · 30 fps · ${text}`);
      view.unmount();
      view = undefined;
    }
  });

  it('says nothing about the connection before a pair is selected', async () => {
    view = await render(<StreamInfoText info={{ bitrateKbps: 500, fps: 25, connection: null }} />);
    expect(view.byTestId('status-stream-info')?.textContent).toBe('500 kbps · 25 fps');
  });
});
