import { describe, expect, it } from 'vitest';
import { RemoteAudioPlayer, type AudioElementLike, type GestureTargetLike } from './remote-audio';

class FakeElement implements AudioElementLike {
  srcObject: MediaProvider | null = null;
  volume = 1;
  muted = false;
  refuse = true;
  plays = 0;
  play(): Promise<void> {
    this.plays += 1;
    return this.refuse
      ? Promise.reject(new DOMException('play() needs a gesture', 'NotAllowedError'))
      : Promise.resolve();
  }
}

class FakeTarget implements GestureTargetLike {
  readonly listeners = new Map<string, () => void>();
  addEventListener(type: string, listener: () => void): void {
    this.listeners.set(type, listener);
  }
  removeEventListener(type: string): void {
    this.listeners.delete(type);
  }
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

function setup() {
  const target = new FakeTarget();
  const blocked: boolean[] = [];
  const player = new RemoteAudioPlayer({
    onBlocked: (b) => blocked.push(b),
    gestureTarget: target,
    makeStream: (track) => ({ track }) as unknown as MediaProvider,
  });
  const element = new FakeElement();
  const track = { kind: 'audio', enabled: true } as MediaStreamTrack;
  return { target, blocked, player, element, track };
}

describe('RemoteAudioPlayer (autoplay)', () => {
  it('a refused play() waits for the first gesture, then plays', async () => {
    const { target, blocked, player, element, track } = setup();
    player.attach(element);
    player.setVolume(0.4);
    player.setTrack(track);
    expect(element.srcObject).toEqual({ track });
    expect(element.volume).toBe(0.4);
    await flush();
    expect(blocked).toEqual([true]);
    expect(player.isBlocked()).toBe(true);
    expect([...target.listeners.keys()].sort()).toEqual(['keydown', 'pointerdown', 'touchend']);

    element.refuse = false;
    target.listeners.get('pointerdown')?.();
    await flush();
    expect(blocked).toEqual([true, false]);
    expect(target.listeners.size).toBe(0);
    expect(element.plays).toBe(2);
  });

  it('mute silences the element and the received track; unmute plays', async () => {
    const { player, element, track } = setup();
    element.refuse = false;
    player.attach(element);
    player.setTrack(track);
    player.setMuted(true);
    expect(element.muted).toBe(true);
    expect(track.enabled).toBe(false);
    const plays = element.plays;
    player.setMuted(false);
    expect(element.muted).toBe(false);
    expect(track.enabled).toBe(true);
    expect(element.plays).toBe(plays + 1);
  });

  it('the volume button unblocks; losing the track clears the state', async () => {
    const { blocked, player, element, track } = setup();
    player.attach(element);
    player.setTrack(track);
    await flush();
    element.refuse = false;
    player.unblock();
    await flush();
    expect(blocked).toEqual([true, false]);
    player.setTrack(null);
    expect(element.srcObject).toBeNull();
    player.dispose();
    expect(player.isBlocked()).toBe(false);
  });
});
