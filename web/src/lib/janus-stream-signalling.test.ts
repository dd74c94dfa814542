import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  JanusStream,
  iceServersFromTurn,
  iceTransportPolicyFromQuery,
  janusCredentials,
  janusServerUrl,
} from './janus-stream';
import { FakeRuntime } from './janus-stream-test-kit';

describe('janus helpers', () => {
  it('builds the gateway URL with the token', () => {
    expect(janusServerUrl({ protocol: 'https:', host: 'kvm:8443' }, 'a b')).toBe(
      'wss://kvm:8443/janus/ws?auth_token=a%20b',
    );
    expect(janusServerUrl({ protocol: 'http:', host: 'kvm' }, null)).toBe('ws://kvm/janus/ws');
  });

  it('builds ICE servers only from non-empty uris', () => {
    expect(iceServersFromTurn(null)).toEqual([]);
    expect(iceServersFromTurn({ username: '', password: '', ttl: 1, uris: ['stun:s'] })).toEqual([
      { urls: ['stun:s'] },
    ]);
  });
});

describe('Janus token and apisecret (SPEC 7)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('hands janus.js the secret and the session token as the gateway asks', () => {
    expect(janusCredentials({ apisecret: null, token_auth: false }, 'tok')).toEqual({});
    expect(janusCredentials({ apisecret: 's', token_auth: false }, 'tok')).toEqual({
      apisecret: 's',
    });
    expect(janusCredentials({ apisecret: null, token_auth: true }, 'tok')).toEqual({
      token: 'tok',
    });
    expect(janusCredentials({ apisecret: null, token_auth: true }, null)).toEqual({});
  });

  it('creates the session with them, and without them when they cannot be read', async () => {
    for (const [credentials, expected] of [
      [() => Promise.resolve({ apisecret: 's', token: 't' }), { apisecret: 's', token: 't' }],
      [() => Promise.reject(new Error('offline')), {}],
    ] as const) {
      const runtime = new FakeRuntime();
      const stream = new JanusStream({
        serverUrl: () => 'ws://device.test/janus/ws',
        getTurn: () => Promise.resolve(null),
        orientation: () => 0,
        loadRuntime: () => Promise.resolve(runtime),
        credentials,
      });
      stream.start();
      await vi.advanceTimersByTimeAsync(0);
      const options = runtime.last().options;
      expect({ apisecret: options.apisecret, token: options.token }).toEqual({
        apisecret: undefined,
        token: undefined,
        ...expected,
      });
      stream.stop();
    }
  });
});

describe('forcing the relay (?ice=relay)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('reads the policy from the page query', () => {
    expect(iceTransportPolicyFromQuery('?ice=relay')).toBe('relay');
    expect(iceTransportPolicyFromQuery('?id=x&ice=relay')).toBe('relay');
    expect(iceTransportPolicyFromQuery('')).toBe('all');
    expect(iceTransportPolicyFromQuery('?ice=all')).toBe('all');
    expect(iceTransportPolicyFromQuery('?ice=RELAY1')).toBe('all');
  });

  it('hands janus.js the policy at every new session (the peer connection gets it)', async () => {
    const runtime = new FakeRuntime();
    let policy: RTCIceTransportPolicy = 'relay';
    const turn = { username: 'u', password: 'p', ttl: 60, uris: ['turn:fleet:3478?transport=udp'] };
    const stream = new JanusStream({
      serverUrl: () => 'ws://device.test/janus/ws',
      getTurn: () => Promise.resolve(turn),
      orientation: () => 0,
      loadRuntime: () => Promise.resolve(runtime),
      iceTransportPolicy: () => policy,
    });
    stream.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(runtime.last().options.iceTransportPolicy).toBe('relay');
    // The relay's servers still come from the `turn` state.
    expect(runtime.last().options.iceServers).toEqual([
      { urls: ['turn:fleet:3478?transport=udp'], username: 'u', credential: 'p' },
    ]);
    stream.stop();
    policy = 'all';
    stream.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(runtime.last().options.iceTransportPolicy).toBe('all');
    stream.stop();
  });

  it('defaults to all', async () => {
    const runtime = new FakeRuntime();
    const stream = new JanusStream({
      serverUrl: () => 'ws://device.test/janus/ws',
      getTurn: () => Promise.resolve(null),
      orientation: () => 0,
      loadRuntime: () => Promise.resolve(runtime),
    });
    stream.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(runtime.last().options.iceTransportPolicy).toBe('all');
    stream.stop();
  });
});
