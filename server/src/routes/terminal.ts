/**
 * The terminal sockets (issue 12 item 9), ttyd's protocol: `/extras/webterm/ttyd/ws` where
 * PiKVM and GL serve ttyd (the device's shell), and `/api/terminal/ws?target=device|serial`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BadRequestError } from '../errors';
import type { TerminalService, TerminalTarget } from '../terminal/terminal-service';
import { notAWebSocket, ownerOf, type SocketLimits, type SocketRegistry } from '../ws/socket-guard';

/** Typing and pastes: an input frame is at most 64 KiB (ws's maxPayload is the same). */
export const TERMINAL_SOCKET_LIMITS: SocketLimits = {
  maxMessageBytes: 64 * 1024,
  messagesPerSecond: 500,
  messageBurst: 1_000,
  bytesPerSecond: 1024 * 1024,
  byteBurst: 2 * 1024 * 1024,
  repliesPerSecond: 20,
  replyBurst: 40,
  // the shell is paused long before this (terminal-service.ts PAUSE_ABOVE)
  maxBufferedBytes: 4 * 1024 * 1024,
  stallMs: 30_000,
};

function targetOf(request: FastifyRequest, fixed?: TerminalTarget): TerminalTarget {
  if (fixed) return fixed;
  const t = (request.query as Record<string, unknown>)['target'] ?? 'device';
  if (t !== 'device' && t !== 'serial')
    throw new BadRequestError("The argument 'target' must be device or serial");
  return t;
}

/** Terminals are counted per login session, per address for header credentials. */
function keyOf(request: FastifyRequest): string {
  const owner = ownerOf(request, 'terminal');
  return owner.tokenHash ?? `address ${owner.remote}`;
}

export function terminalRoutes(
  app: FastifyInstance,
  terminals: TerminalService,
  sockets: SocketRegistry,
): void {
  const routes: Array<[string, TerminalTarget | undefined]> = [
    ['/extras/webterm/ttyd/ws', 'device'],
    ['/api/terminal/ws', undefined],
  ];
  for (const [url, fixed] of routes) {
    app.route({
      method: 'GET',
      url,
      // a bad target is a plain 400 and one terminal too many a 429, before the upgrade
      preValidation: async (request) => {
        targetOf(request, fixed);
        terminals.admit(keyOf(request));
        sockets.admitNew(ownerOf(request, 'terminal'));
      },
      handler: notAWebSocket,
      wsHandler: (socket, request) => {
        const guard = sockets.guard(socket, ownerOf(request, 'terminal'), TERMINAL_SOCKET_LIMITS);
        // typing uses the session: it slides its expiry, and an ended one closes the socket
        terminals.attach(guard, keyOf(request), targetOf(request, fixed), () =>
          sockets.checkSession(guard),
        );
      },
    });
  }
}
