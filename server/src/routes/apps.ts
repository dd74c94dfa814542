/** `/api/apps`: the apps center's list (issue 27, docs/api.md "Apps"). */
import type { FastifyInstance } from 'fastify';
import type { AppsList } from '@kvm/protocol/apps';
import type { AppsService } from '../services/apps/apps-service';

export function appsRoutes(app: FastifyInstance, apps: AppsService): void {
  app.get('/api/apps', async (): Promise<AppsList> => ({ apps: await apps.list() }));
}
