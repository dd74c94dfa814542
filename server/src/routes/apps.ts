/** `/api/apps`: the apps center's list (issue 27, docs/api.md "Apps"). */
import type { FastifyInstance } from 'fastify';
import type { AppId, AppsList } from '@kvm/protocol/apps';
import type { AppDriver } from '../drivers/apps/types';
import { NotFoundError } from '../errors';
import type { AppsService } from '../services/apps/apps-service';

/** The app `id` as the control its routes use; 404 "The <label> app is not on this device" when absent. */
export function appOf<T extends AppDriver>(apps: AppsService, id: AppId, label: string): T {
  const app = apps.get(id);
  if (!app) throw new NotFoundError(`The ${label} app is not on this device`);
  return app as T;
}

export function appsRoutes(app: FastifyInstance, apps: AppsService): void {
  app.get('/api/apps', async (): Promise<AppsList> => ({ apps: await apps.list() }));
}
