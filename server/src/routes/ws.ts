/** `/api/ws`: the event socket (wire-protocol.md 2, docs/events.md). */
import type { FastifyInstance } from 'fastify';
import type { EventHub } from '../ws/event-hub';
import { bool } from '../validators';

export function wsRoutes(app: FastifyInstance, hub: EventHub): void {
  app.get(
    '/api/ws',
    {
      websocket: true,
      // Checked before the upgrade: a bad `stream` is a plain 400, not a socket.
      preValidation: async (request) => {
        bool('stream', (request.query as Record<string, unknown>)['stream'], true);
      },
    },
    (socket, request) => {
      const stream = bool('stream', (request.query as Record<string, unknown>)['stream'], true);
      void hub.accept(socket, {
        token: request.auth?.token ?? null,
        sessionHash: request.auth?.tokenHash ?? null,
        stream,
        remote: request.socket.remoteAddress ?? '',
      });
    },
  );
}
