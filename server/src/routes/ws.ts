/** `/api/ws`: the event socket (wire-protocol.md 2, docs/events.md). */
import type { FastifyInstance } from 'fastify';
import type { EventHub } from '../ws/event-hub';
import { notAWebSocket, ownerOf, type SocketRegistry } from '../ws/socket-guard';
import { bool } from '../validators';

export function wsRoutes(app: FastifyInstance, hub: EventHub, sockets: SocketRegistry): void {
  app.route({
    method: 'GET',
    url: '/api/ws',
    // Checked before the upgrade: a bad `stream` is a plain 400 and one socket too many a
    // 429, not a socket.
    preValidation: async (request) => {
      bool('stream', (request.query as Record<string, unknown>)['stream'], true);
      sockets.admitNew(ownerOf(request, 'event'));
    },
    handler: notAWebSocket,
    wsHandler: (socket, request) => {
      const stream = bool('stream', (request.query as Record<string, unknown>)['stream'], true);
      void hub.accept(socket, { ...ownerOf(request, 'event'), stream });
    },
  });
}
