/** `GET /api/audio` (issue 14): the sound's state, AudioState (protocol/src/audio.ts). */
import type { FastifyInstance } from 'fastify';
import type { AudioService } from '../services/audio/audio-service';

export function audioRoutes(app: FastifyInstance, audio: AudioService): void {
  app.get('/api/audio', async () => audio.getState());
}
