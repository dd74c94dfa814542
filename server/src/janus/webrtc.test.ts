import Fastify from 'fastify';
import fastifyWebsocket from '@fastify/websocket';
import { describe, expect, it } from 'vitest';
import { SILENT_LOGGER as silent } from '../log';
import { FakeFeed, JanusTestClient } from './test-support';
import { janusFeatures, registerJanus } from './gateway';
import { peerModuleRequested } from './webrtc';

describe('werift on first use', () => {
  it('is not loaded by the gateway until the first /janus/ws socket', async () => {
    const app = Fastify();
    await app.register(fastifyWebsocket);
    registerJanus(app, {
      feed: new FakeFeed(),
      iceServers: () => [],
      features: () => janusFeatures([]),
      onInput: () => {},
      onViewerGone: () => {},
      log: silent,
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      expect(peerModuleRequested()).toBe(false);
      const addr = app.server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      const c = await JanusTestClient.connect(`ws://127.0.0.1:${port}/janus/ws`);
      await expect.poll(() => peerModuleRequested()).toBe(true);
      await c.close();
    } finally {
      await app.close();
    }
  });
});
